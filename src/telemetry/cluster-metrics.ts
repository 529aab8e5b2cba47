import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { HttpError } from '../errors.js';
import { registry } from './metrics.js';

/**
 * `/metrics` with `--workers N`: whichever worker a scrape reaches asks the primary, which collects
 * every worker's figures over IPC and adds them up (prom-client's AggregatorRegistry: counters and
 * histograms summed; per-process figures, labelled `worker`, kept apart). One scrape, one view.
 */

type Metrics = MetricObjectWithValues<MetricValue<string>>[];

const SCRAPE = 'plant-store:metrics-scrape'; // worker -> primary: the whole view, please
const VIEW = 'plant-store:metrics-view'; // primary -> worker: here it is
const COLLECT = 'plant-store:metrics-collect'; // primary -> every worker: your figures
const FIGURES = 'plant-store:metrics-figures'; // worker -> primary

/** A worker slower than this to give its figures is counted with the ones it gave last. */
const COLLECT_TIMEOUT_MS = 2_000;
const SCRAPE_TIMEOUT_MS = 5_000;
/** Exited workers' figures kept apart before they are merged into one set. */
const RETIRED_PARTS_MAX = 8;

interface Message {
  type?: string;
  id?: number;
  text?: string;
  metrics?: Metrics;
}

let scrapes = 0;
const waitingScrapes = new Map<number, (text: string) => void>();

/** In a worker: answers the primary's collections; call once, before serving. */
export function answerMetricCollections() {
  process.on('message', (message: Message) => {
    if (message?.type === COLLECT) {
      void registry.getMetricsAsJSON().then((metrics) => process.send!({ type: FIGURES, id: message.id, metrics }));
    } else if (message?.type === VIEW) {
      waitingScrapes.get(message.id!)?.(message.text!);
    }
  });
}

/** The text of `/metrics`: this process's registry, or with workers, the primary's view of all of them. */
export function metricsText(): Promise<string> {
  if (!cluster.isWorker) return registry.metrics();
  const id = scrapes++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waitingScrapes.delete(id);
      reject(new HttpError(503, 'the metrics of the other workers did not arrive in time', { 'retry-after': '1' }));
    }, SCRAPE_TIMEOUT_MS);
    waitingScrapes.set(id, (text) => {
      clearTimeout(timer);
      waitingScrapes.delete(id);
      resolve(text);
    });
    process.send!({ type: SCRAPE, id });
  });
}

/** Counters and histograms of plant_store_*: what must not go backwards when a worker is replaced. */
function cumulative(metrics: Metrics): Metrics {
  // prom-client's types say an enum; the JSON it produces says 'counter', 'histogram'...
  const kept = new Set<unknown>(['counter', 'histogram']);
  return metrics.filter((m) => m.name.startsWith('plant_store_') && kept.has(m.type));
}

/** In the primary: collects and adds up the workers' figures for each scrape. */
export function aggregateWorkerMetrics() {
  let collections = 0;
  const collecting = new Map<number, (worker: Worker, metrics: Metrics) => void>();
  /** Each worker's figures as last collected, to stand in for a worker that does not answer in time. */
  const lastSeen = new Map<number, Metrics>();
  /**
   * What exited workers had counted when last collected, so that sums never go backwards (which
   * Prometheus would take for a counter reset). Added at once, merged into one now and then.
   */
  let retired: Metrics[] = [];

  function collect(): Promise<Metrics[]> {
    const id = collections++;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
    const answers = new Map<number, Metrics>();
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        collecting.delete(id);
        resolve(workers.map((w) => answers.get(w.id) ?? lastSeen.get(w.id) ?? []));
      };
      const timer = setTimeout(finish, COLLECT_TIMEOUT_MS);
      collecting.set(id, (worker, metrics) => {
        answers.set(worker.id, metrics);
        lastSeen.set(worker.id, metrics);
        if (answers.size === workers.length) finish();
      });
      for (const worker of workers) worker.send({ type: COLLECT, id });
      if (workers.length === 0) finish();
    });
  }

  cluster.on('message', (worker, message: Message) => {
    if (message?.type === FIGURES) {
      collecting.get(message.id!)?.(worker, message.metrics!);
    } else if (message?.type === SCRAPE) {
      void collect()
        .then((all) => AggregatorRegistry.aggregate([...all, ...retired]).metrics())
        .then((text) => worker.isConnected() && worker.send({ type: VIEW, id: message.id, text }));
    }
  });

  cluster.on('exit', (worker) => {
    const last = lastSeen.get(worker.id);
    lastSeen.delete(worker.id);
    if (last !== undefined) retired.push(cumulative(last));
    if (retired.length < RETIRED_PARTS_MAX) return;
    const parts = retired;
    void AggregatorRegistry.aggregate(parts)
      .getMetricsAsJSON()
      .then((merged) => {
        retired = [merged as Metrics, ...retired.slice(parts.length)];
      });
  });
}
