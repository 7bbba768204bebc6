// A fake controller that reports the occurrences it reads on standard input
// through EventRecorder, the way an app would wire it:
//
//   const rec = new EventRecorder({ reportingController: 'example.com/my-controller' });
//   rec.event(pod, null, 'Warning', 'BackOff', 'Restart', `Back-off restarting ${name}`);
//   await rec.shutdown(); // sends what is queued
//
// Input: one occurrence per line as JSON, the otel-k8sevents stream shape
// ({"type", "reason", "action", "note", "regarding": {...}, "related": {...}};
// other fields are ignored; without an action the reason is it, as
// events.k8s.io requires one). An empty line flushes and prints the counts
// as {"flushed": {...}}; at the end of the input it shuts down and prints
// {"done": {...}}. --max-seconds bounds the whole run.
//
// The collector's URL: --url, else K8SEVENTS_OTLP_ENDPOINT (never
// OTEL_EXPORTER_OTLP_ENDPOINT: see k8sevents.js); without either it exits 2.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { EventRecorder } from './k8sevents.js';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' }, // default: K8SEVENTS_OTLP_ENDPOINT
    'token-file': { type: 'string' }, // default: /var/run/secrets/k8sevents/token; "-": none
    'max-request-bytes': { type: 'string' }, // default: 1 MiB, the collector's limit; 0: no bound
    'batch-delay-millis': { type: 'string' }, // default: 1000; how long a record waits for a batch
    controller: { type: 'string', default: 'example.com/node-controller' },
    instance: { type: 'string' },
    'max-seconds': { type: 'string', default: '600' },
  },
});

const tokenFile = flags['token-file'] === '-' ? null : flags['token-file'];
const number = (flag) => (flags[flag] === undefined ? undefined : Number(flags[flag]));
let rec;
try {
  rec = new EventRecorder({
    reportingController: flags.controller,
    reportingInstance: flags.instance,
    url: flags.url,
    tokenFile,
    maxRequestBytes: number('max-request-bytes'),
    scheduledDelayMillis: number('batch-delay-millis'),
  });
} catch (err) {
  console.error(err.message);
  process.exit(2);
}

const bound = setTimeout(() => {
  console.error(`node example: still running after ${flags['max-seconds']} s: exiting`);
  process.exit(2);
}, Number(flags['max-seconds']) * 1000);
bound.unref();

const print = (what) => process.stdout.write(JSON.stringify({ [what]: rec.stats() }) + '\n');

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') {
    await rec.flush();
    print('flushed');
    continue;
  }
  const o = JSON.parse(line);
  rec.event(o.regarding, o.related ?? null, o.type, o.reason, o.action || o.reason, o.note);
}
await rec.shutdown();
print('done');
