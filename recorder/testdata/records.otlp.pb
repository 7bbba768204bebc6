
Ô


service.name
goldenµ
.
,github.com/k8sevents/otel-k8sevents/recorderÒ	M2»Ùµ˜Warning*

Back-off 32
k8s.event.reason	
BackOff2
k8s.namespace.name
shop2
k8s.object.kind
Pod2
k8s.object.name
web-12
k8s.object.uid
	uid-web-12
k8s.object.api_version
v12#
k8s.object.resource_version
4226
k8s.event.reporting_controller
example.com/golden2*
k8s.event.reporting_instance

golden-022
k8s.event.source.component
example.com/golden2+
$k8s.event.annotation.example.com/run
7YM2»Ùµ˜b	k8s.event­	M2»Ùµ˜	Normal*
assigned to node-12
k8s.event.reason
	Scheduled2
k8s.event.action	
Binding2
k8s.namespace.name
shop2
k8s.object.kind
Pod2
k8s.object.name
web-12
k8s.object.uid
	uid-web-12
k8s.object.api_version
v12#
k8s.object.resource_version
422 
k8s.event.related.kind
Node2"
k8s.event.related.name
node-12%
k8s.event.related.uid

uid-node-12%
k8s.event.related.api_version
v126
k8s.event.reporting_controller
example.com/golden2*
k8s.event.reporting_instance

golden-0YM2»Ùµ˜b	k8s.event