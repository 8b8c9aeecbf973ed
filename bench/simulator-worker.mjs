// The simulator on a thread of its own, so that serving the benchmark's requests does not share
// the event loop of the sync being measured (the real service is another machine). Plain
// JavaScript: it registers tsx itself, as bin/insights-sync.js does, whoever starts the thread.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { startSimulator } = await import('../src/simulator/server.ts');
const simulator = await startSimulator(workerData);
parentPort.on('message', async (message) => {
  if (message === 'stats') parentPort.postMessage({ stats: simulator.stats() });
  if (message === 'totals') {
    const truth = simulator.truth();
    parentPort.postMessage({ totals: truth.feedback.length + truth.survey.length + truth.recordings.length });
  }
  if (message === 'stop') {
    await simulator.stop();
    parentPort.close();
  }
});
parentPort.postMessage({ url: simulator.url, apiKey: simulator.apiKey });
