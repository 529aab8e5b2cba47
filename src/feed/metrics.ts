import { Counter, Gauge } from 'prom-client';
import { registry } from '../telemetry/metrics.js';

export const feedStreamsOpen = new Gauge({
  name: 'plant_store_feed_streams_open',
  help: 'Change feeds (GET /events) open in this process',
  registers: [registry],
});

export const feedStreamsEnded = new Counter({
  name: 'plant_store_feed_streams_ended_total',
  help: 'Change feeds ended, by reason (client, slow-reader, token, stopping, retention, error)',
  labelNames: ['reason'],
  registers: [registry],
});
