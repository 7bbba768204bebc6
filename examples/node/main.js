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
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { EventRecorder } from './k8sevents.js';

const { values: flags } = parseArgs({
  options: {
    url: { type: 'string' }, // default: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
    'token-file': { type: 'string' }, // default: /var/run/secrets/k8sevents/token; "-": none
    controller: { type: 'string', default: 'example.com/node-controller' },
    instance: { type: 'string' },
    'max-seconds': { type: 'string', default: '600' },
  },
});

const tokenFile = flags['token-file'] === '-' ? null : flags['token-file'];
const rec = new EventRecorder({
  reportingController: flags.controller,
  reportingInstance: flags.instance,
  url: flags.url,
  tokenFile,
});

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
