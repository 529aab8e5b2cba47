/** The part of autocannon's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    connections?: number;
    duration?: number;
    timeout?: number;
    /** The run ends after this many responses, or after `duration`, whichever comes first. */
    maxOverallRequests?: number;
    headers?: Record<string, string>;
    requests?: Array<{ setupRequest?: (request: Record<string, unknown>) => Record<string, unknown> }>;
  }
  interface Result {
    duration: number;
    requests: { total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  }
  /** Awaited, the run's result; meanwhile an emitter of each 'response'. */
  interface Instance extends PromiseLike<Result> {
    on(event: 'response', listener: () => void): Instance;
  }
  function autocannon(options: Options): Instance;
  export default autocannon;
}
