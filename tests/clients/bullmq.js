// SPDX-License-Identifier: GPL-2.0-only
// BullMQ (npm) against a server: a queue of N jobs, 2 workers, some jobs
// failing once and retried with backoff, some delayed; every job must
// complete exactly once. Prints one JSON line of counts; exits 1 on failure.
'use strict';
const path = require('node:path');

const clientDir = path.join(__dirname, '..', '..', 'clients', 'node');
const { Queue, Worker } = require(require.resolve('bullmq', { paths: [clientDir] }));

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1]);
const n = Number(args.includes('--jobs') ? args[args.indexOf('--jobs') + 1] : 1000);
const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };

async function main() {
  const name = 'q' + process.pid;
  const queue = new Queue(name, { connection });
  const done = new Map();
  const attempts = new Map();
  let failedOnce = 0;
  const work = async (job) => {
    attempts.set(job.id, (attempts.get(job.id) || 0) + 1);
    if (job.data.flaky && job.attemptsMade === 0) {
      failedOnce++;
      throw new Error('first attempt fails');
    }
    return job.data.i * 2;
  };
  const workers = [0, 1].map(() => new Worker(name, work, { connection, concurrency: 4 }));
  for (const w of workers) {
    w.on('completed', (job, result) => {
      done.set(job.id, (done.get(job.id) || 0) + 1);
      if (result !== job.data.i * 2) throw new Error('wrong result for ' + job.id);
    });
  }
  const jobs = [];
  for (let i = 0; i < n; i++) {
    const opts = { attempts: 3, backoff: { type: 'fixed', delay: 50 } };
    if (i % 10 === 0) opts.delay = 200;
    jobs.push({ name: 'j', data: { i, flaky: i % 7 === 0 }, opts });
  }
  for (let i = 0; i < jobs.length; i += 100) await queue.addBulk(jobs.slice(i, i + 100));
  const deadline = Date.now() + 120000;
  while (done.size < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'delayed', 'active');
  for (const w of workers) await w.close();
  await queue.obliterate({ force: true });
  await queue.close();
  const twice = [...done.values()].filter((v) => v !== 1).length;
  const out = { jobs: n, completed: done.size, twice, failedOnce, counts };
  console.log(JSON.stringify(out));
  const expectFlaky = Math.ceil(n / 7);
  if (done.size !== n || twice || failedOnce !== expectFlaky || counts.completed !== undefined &&
      counts.completed !== 0 && counts.completed !== n) process.exit(1);
}

main().catch((e) => { console.error(e); process.exit(1); });
