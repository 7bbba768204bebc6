// Kubernetes Events from a Node.js app, as OpenTelemetry log records by the
// otel-k8sevents log-record contract (README.md, "The log-record contract"),
// sent with the official OpenTelemetry logs SDK and its OTLP/HTTP exporter
// to a collector running k8seventsotlp -> eventseries -> k8sevents.
//
// One call is one log record: one occurrence. The collector folds the
// occurrences into Event series and counts them; the app sends no name,
// uid or count. The record carries what the Go recorder's tools/events
// recorder (recorder/) writes for the same call, key for key.

import { readFile } from 'node:fs/promises';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { defaultResource, detectResources, envDetector } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';

// EVENT_NAME is the EventName of every record: an occurrence of a
// Kubernetes Event.
export const EVENT_NAME = 'k8s.event';

// KEYS are the contract's attribute keys this module writes (the same
// strings as internal/k8sevent/keys.go and recorder/keys.go).
export const KEYS = Object.freeze({
  reason: 'k8s.event.reason',
  action: 'k8s.event.action',
  namespace: 'k8s.namespace.name', // of the regarding object
  objectKind: 'k8s.object.kind',
  objectName: 'k8s.object.name',
  objectUID: 'k8s.object.uid',
  objectAPIVersion: 'k8s.object.api_version',
  objectFieldPath: 'k8s.object.fieldpath',
  objectResourceVersion: 'k8s.object.resource_version',
  relatedKind: 'k8s.event.related.kind',
  relatedName: 'k8s.event.related.name',
  relatedNamespace: 'k8s.event.related.namespace',
  relatedUID: 'k8s.event.related.uid',
  relatedAPIVersion: 'k8s.event.related.api_version',
  relatedFieldPath: 'k8s.event.related.fieldpath',
  relatedResourceVersion: 'k8s.event.related.resource_version',
  reportingController: 'k8s.event.reporting_controller',
  reportingInstance: 'k8s.event.reporting_instance',
});

// DEFAULT_TOKEN_FILE is where the pod spec of recorder/README.md projects
// the ServiceAccount token for the collector's audience.
export const DEFAULT_TOKEN_FILE = '/var/run/secrets/k8sevents/token';

const SEVERITY = { Normal: SeverityNumber.INFO, Warning: SeverityNumber.WARN };

// bearerFromFile is a headers factory for the OTLP exporter: it reads the
// token file before every request (kubelet rewrites the file before the
// token expires), so no request goes out with an older token than the file
// holds. While the file is absent or empty, requests go without a token,
// reported once through warn each time it goes missing. The SDK requires
// that a headers factory never throws.
export function bearerFromFile(path, warn = (msg) => console.warn(msg)) {
  let missing = false;
  return async () => {
    let token = '';
    let why = 'is empty';
    try {
      token = (await readFile(path, 'utf8')).trim();
    } catch (err) {
      why = err.code === 'ENOENT' ? 'does not exist' : `cannot be read: ${err.message}`;
    }
    if (token === '') {
      if (!missing) warn(`k8sevents: the ServiceAccount token file ${path} ${why}: sending without a token`);
      missing = true;
      return {};
    }
    missing = false;
    return { authorization: `Bearer ${token}` };
  };
}

// EventRecorder sends Events as log records. Options:
//   reportingController  required: the controller's name (e.g. example.com/my-operator)
//   reportingInstance    this replica; default: none
//   url                  the collector's OTLP/HTTP logs URL; default:
//                        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT + /v1/logs
//   tokenFile            the projected ServiceAccount token; default DEFAULT_TOKEN_FILE; null: none
//   maxQueueSize         records waiting to be sent (the batch processor drops beyond it); default 10000
//   exportTimeoutMillis  one export with the SDK's retries; default 10000
//   exporter             a LogRecordExporter instead of the OTLP one (tests)
// The resource is the SDK's default and OTEL_RESOURCE_ATTRIBUTES /
// OTEL_SERVICE_NAME.
export class EventRecorder {
  constructor(opts) {
    if (!opts?.reportingController) throw new Error('k8sevents: reportingController is required');
    this.controller = opts.reportingController;
    this.instance = opts.reportingInstance ?? '';
    const tokenFile = opts.tokenFile === undefined ? DEFAULT_TOKEN_FILE : opts.tokenFile;
    const timeout = opts.exportTimeoutMillis ?? 10000;
    const otlp = opts.exporter ?? new OTLPLogExporter({
      url: opts.url,
      timeoutMillis: timeout,
      ...(tokenFile ? { headers: bearerFromFile(tokenFile) } : {}),
    });
    this.counts = { recorded: 0, invalid: 0, sent: 0, failed: 0 };
    this.provider = new LoggerProvider({
      resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
      processors: [new BatchLogRecordProcessor({
        exporter: countingExporter(otlp, this.counts),
        maxQueueSize: opts.maxQueueSize ?? 10000,
        maxExportBatchSize: 512,
        exportTimeoutMillis: timeout,
      })],
    });
    this.logger = this.provider.getLogger('github.com/k8sevents/otel-k8sevents/examples/node');
  }

  // event is tools/events' Eventf: regarding (and related, optional) are
  // object references {kind, namespace, name, uid, apiVersion, fieldPath,
  // resourceVersion}; type is Normal or Warning. An event without a
  // regarding object or with another type is refused and counted, as
  // client-go refuses it. Returns whether it was recorded.
  event(regarding, related, type, reason, action, note) {
    if (!regarding?.kind || !(type in SEVERITY)) {
      this.counts.invalid++;
      return false;
    }
    const at = new Date();
    this.logger.emit({
      eventName: EVENT_NAME,
      timestamp: at,
      observedTimestamp: at,
      severityNumber: SEVERITY[type],
      severityText: type,
      body: note,
      attributes: this.attributes(regarding, related, reason, action),
    });
    this.counts.recorded++;
    return true;
  }

  attributes(regarding, related, reason, action) {
    const a = { [KEYS.reason]: reason };
    put(a, KEYS.action, action);
    // Written even when empty (a cluster-scoped object): the collector
    // reads the resource's attributes too, and an app's resource may name
    // its own pod's namespace.
    a[KEYS.namespace] = regarding.namespace ?? '';
    putRef(a, regarding, REGARDING_KEYS);
    if (related) putRef(a, related, RELATED_KEYS);
    a[KEYS.reportingController] = this.controller;
    put(a, KEYS.reportingInstance, this.instance);
    return a;
  }

  // stats: recorded = sent + failed + pending or dropped by the batch
  // processor (its queue full).
  stats() {
    return { ...this.counts };
  }

  // flush sends what was recorded so far.
  flush() {
    return this.provider.forceFlush();
  }

  // shutdown sends what is queued and stops.
  shutdown() {
    return this.provider.shutdown();
  }
}

// The attribute key of each field of an object reference: the regarding
// object's namespace is written apart (even when empty), the related one's
// here.
const REGARDING_KEYS = {
  kind: KEYS.objectKind,
  name: KEYS.objectName,
  uid: KEYS.objectUID,
  apiVersion: KEYS.objectAPIVersion,
  fieldPath: KEYS.objectFieldPath,
  resourceVersion: KEYS.objectResourceVersion,
};
const RELATED_KEYS = {
  kind: KEYS.relatedKind,
  name: KEYS.relatedName,
  namespace: KEYS.relatedNamespace,
  uid: KEYS.relatedUID,
  apiVersion: KEYS.relatedAPIVersion,
  fieldPath: KEYS.relatedFieldPath,
  resourceVersion: KEYS.relatedResourceVersion,
};

// putRef writes the non-empty fields of ref under keys.
function putRef(attrs, ref, keys) {
  for (const [field, key] of Object.entries(keys)) put(attrs, key, ref[field]);
}

function put(attrs, key, value) {
  if (value) attrs[key] = value;
}

// countingExporter counts the records the exporter sent and those it gave
// up on (after the SDK's own retries).
function countingExporter(exporter, counts) {
  return {
    export(records, done) {
      exporter.export(records, (result) => {
        if (result.code === 0) counts.sent += records.length; // ExportResultCode.SUCCESS
        else counts.failed += records.length;
        done(result);
      });
    },
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    shutdown: () => exporter.shutdown(),
  };
}
