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
import { JsonLogsSerializer } from '@opentelemetry/otlp-transformer';
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

// DEFAULT_TOKEN_FILE is where the pod spec (deploy.yaml) projects the
// ServiceAccount token for the collector's audience.
export const DEFAULT_TOKEN_FILE = '/var/run/secrets/k8sevents/token';

// ENDPOINT_VARIABLE names the collector's URL, and nothing else does: not
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, which
// may name another collector (the OpenTelemetry Operator's
// auto-instrumentation sets them to its own), and not localhost (a sidecar
// collector): every request carries the app's ServiceAccount token, so it
// goes only where this variable or the url option says.
export const ENDPOINT_VARIABLE = 'K8SEVENTS_OTLP_ENDPOINT';

// DEFAULT_MAX_REQUEST_BYTES is the ready configurations' limit on a
// request's body (max_request_body_size: 1 MiB, decompressed). The
// receiver answers a larger one 413, which the exporter never retries: the
// whole batch would be lost.
export const DEFAULT_MAX_REQUEST_BYTES = 1048576;

// logsURL is the collector's OTLP/HTTP logs URL: the url option, else
// K8SEVENTS_OTLP_ENDPOINT; a URL without a path gets /v1/logs. Neither
// given is an error, not a default.
export function logsURL(url, env = process.env) {
  const given = url ?? env[ENDPOINT_VARIABLE];
  if (!given) {
    throw new Error(`k8sevents: no collector URL: set ${ENDPOINT_VARIABLE} to the collector's OTLP/HTTP logs URL ` +
      `(e.g. http://otelcol-tier1.otel-k8sevents:4318/v1/logs) or pass url; OTEL_EXPORTER_OTLP_ENDPOINT is not read: ` +
      `it may name another collector, which would get this app's ServiceAccount token`);
  }
  const u = new URL(given);
  if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/logs';
  return u.href;
}

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
//   url                  the collector's OTLP/HTTP logs URL; default: K8SEVENTS_OTLP_ENDPOINT (logsURL)
//   tokenFile            the projected ServiceAccount token; default DEFAULT_TOKEN_FILE; null: none
//   maxRequestBytes      the largest request body sent (the collector's limit); default 1 MiB; 0: no bound
//   maxQueueSize         records waiting to be sent (the batch processor drops beyond it); default 10000
//   exportTimeoutMillis  one export with the SDK's retries; default 10000
//   scheduledDelayMillis how long a record may wait for a batch; default 1000
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
      url: logsURL(opts.url),
      timeoutMillis: timeout,
      ...(tokenFile ? { headers: bearerFromFile(tokenFile) } : {}),
    });
    this.counts = { recorded: 0, invalid: 0, sent: 0, failed: 0 };
    const maxBytes = opts.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    const counting = countingExporter(otlp, this.counts);
    this.provider = new LoggerProvider({
      resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
      processors: [new BatchLogRecordProcessor({
        exporter: maxBytes > 0 ? sizeBoundExporter(counting, maxBytes, this.counts) : counting,
        maxQueueSize: opts.maxQueueSize ?? 10000,
        maxExportBatchSize: 512,
        exportTimeoutMillis: timeout,
        scheduledDelayMillis: opts.scheduledDelayMillis ?? 1000,
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
    const at = this.stamp();
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

  // stamp is the time of a call in nanoseconds (an HrTime), after the
  // previous call's: the collector takes a request identical to one it
  // counted within the hour for that request sent again, so two
  // occurrences must never share a time (Date has only milliseconds).
  stamp() {
    let ns = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
    if (this.stamped !== undefined && ns <= this.stamped) ns = this.stamped + 1n;
    this.stamped = ns;
    return [Number(ns / 1000000000n), Number(ns % 1000000000n)];
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
  // processor (its queue full); failed includes records larger than
  // maxRequestBytes alone, never sent.
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

// sizeBoundExporter sends each batch in parts whose request body (the
// OTLP/JSON the HTTP exporter sends, measured with the SDK's own
// serializer) is at most maxBytes: a batch over the limit is halved until
// each part fits, the parts sent side by side as the SDK sends batches. A
// record that alone is larger cannot be sent: it is counted failed, and
// said once on stderr. The batch's result is a failure if any part failed.
function sizeBoundExporter(exporter, maxBytes, counts, warn = (msg) => console.warn(msg)) {
  let warned = false;
  const fits = (records) => JsonLogsSerializer.serializeRequest(records).length <= maxBytes;
  const split = (records, parts, tooLarge) => {
    if (fits(records)) parts.push(records);
    else if (records.length === 1) tooLarge.push(records[0]);
    else {
      const half = Math.ceil(records.length / 2);
      split(records.slice(0, half), parts, tooLarge);
      split(records.slice(half), parts, tooLarge);
    }
  };
  const send = (records) => new Promise((resolve) => exporter.export(records, resolve));
  return {
    export(records, done) {
      const parts = [];
      const tooLarge = [];
      if (records.length > 0) split(records, parts, tooLarge);
      if (tooLarge.length > 0) {
        counts.failed += tooLarge.length;
        if (!warned) warn(`k8sevents: ${tooLarge.length} record(s) larger than ${maxBytes} bytes alone: not sent (the collector refuses larger requests)`);
        warned = true;
      }
      Promise.all(parts.map(send)).then((results) => {
        const failed = results.find((r) => r.code !== 0);
        // ExportResultCode: SUCCESS 0, FAILED 1.
        done(failed ?? (tooLarge.length > 0 ? { code: 1, error: new Error('records larger than maxRequestBytes') } : { code: 0 }));
      });
    },
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
  };
}
