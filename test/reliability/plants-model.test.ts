import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ENGINES } from '../helpers/engines.js';
import { call, nextLink, type Reply } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import { scaled } from '../helpers/load.js';

/**
 * A model of the plants API, checked against a real server: random interleavings of create, PATCH
 * (with and without If-Match), DELETE, GET by id, listing and paging by three accounts that share
 * the same ids. Writes run several at a time (one per account and id), so group-commit batches mix
 * creates, updates and deletes of different accounts. After every answer the server must agree
 * with the model exactly, which gives the contract's promises:
 * - no leak: another account's plant under the same id never shows (names carry the account);
 * - no stale page: every page equals what the model holds at that moment (SQLite's page cache
 *   must drop pages the moment a change commits);
 * - no lost change: every GET, page and final listing shows each acknowledged change;
 * - paging while plants are deleted (a walk does writes between its pages) never repeats a plant
 *   and never skips one that existed the whole time.
 */

const ACCOUNTS = ['model-a', 'model-b', 'model-c'];
const IDS = [
  -9223372036854775808n,
  -1n,
  0n,
  1n,
  2n,
  3n,
  5n,
  8n,
  9007199254740992n,
  9007199254740993n,
  9223372036854775807n,
];
const TAGS = { none: undefined, empty: '', plain: 'green', unicode: 'grün 🌱' } as const;
type TagChoice = keyof typeof TAGS;

type IfMatch = 'none' | 'current' | 'stale';
type Write =
  | { kind: 'create'; account: number; id: number; replay: boolean; tag: TagChoice }
  | {
      kind: 'patch';
      account: number;
      id: number;
      rename: boolean;
      tag: TagChoice | 'keep' | 'remove';
      ifMatch: IfMatch;
    }
  | { kind: 'delete'; account: number; id: number; ifMatch: IfMatch };
type Step =
  | { kind: 'writes'; writes: Write[] }
  | { kind: 'get'; account: number; id: number }
  | { kind: 'list'; account: number; limit: number }
  | { kind: 'walk'; account: number; limit: number; between: Write[][] };

const account = fc.nat({ max: ACCOUNTS.length - 1 });
const id = fc.nat({ max: IDS.length - 1 });
const tag = fc.constantFrom<TagChoice>('none', 'empty', 'plain', 'unicode');
const ifMatch = fc.constantFrom<IfMatch>('none', 'current', 'stale');
const write: fc.Arbitrary<Write> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('create' as const), account, id, replay: fc.boolean(), tag }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('patch' as const),
      account,
      id,
      rename: fc.boolean(),
      tag: fc.constantFrom<TagChoice | 'keep' | 'remove'>('keep', 'remove', 'none', 'empty', 'plain', 'unicode'),
      ifMatch,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), account, id, ifMatch }) },
);
/** Writes sent together: at most one per account and id, so the model knows each one's outcome. */
const writes = fc.uniqueArray(write, { minLength: 1, maxLength: 4, selector: (w) => `${w.account} ${w.id}` });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: writes.map((w) => ({ kind: 'writes' as const, writes: w })) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('get' as const), account, id }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('list' as const), account, limit: fc.integer({ min: 1, max: 4 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('walk' as const),
      account,
      limit: fc.integer({ min: 1, max: 3 }),
      between: fc.array(writes, { maxLength: 6 }),
    }),
  },
);

interface ModelPlant {
  name: string;
  tag?: string;
  /** The ETag, once an answer showed it. */
  etag?: string;
}

const asPlant = ({ name, tag }: ModelPlant) => (tag === undefined ? { name } : { name, tag });
const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

/** The model and the requests that check the server against it, for one run. */
class Run {
  /** account -> id -> plant. */
  private readonly plants = ACCOUNTS.map(() => new Map<bigint, ModelPlant>());
  /** account -> id -> an ETag the plant had before its latest change (for If-Match: stale). */
  private readonly staleTags = ACCOUNTS.map(() => new Map<bigint, string>());
  private version = 0;

  constructor(
    private readonly base: string,
    private readonly tokens: string[],
  ) {}

  private request(account: number, path: string, init: RequestInit = {}): Promise<Reply> {
    return call(`${this.base}${path}`, { ...init, token: this.tokens[account] });
  }

  /** Deletes every id of every account, so each run starts from an empty store. */
  async reset() {
    await Promise.all(
      ACCOUNTS.flatMap((_, a) =>
        IDS.map(async (plantId) => {
          const reply = await this.request(a, `/plants/${plantId}`, { method: 'DELETE' });
          assert.ok([204, 404].includes(reply.status), reply.text);
        }),
      ),
    );
    for (let a = 0; a < ACCOUNTS.length; a++) await this.checkListing(a);
  }

  async step(s: Step) {
    if (s.kind === 'writes') return this.writes(s.writes);
    if (s.kind === 'get') return this.get(s.account, IDS[s.id]!);
    if (s.kind === 'list') return this.page(s.account, `/plants?limit=${s.limit}`, null, s.limit);
    return this.walk(s);
  }

  private writes(group: Write[]) {
    return Promise.all(group.map((w) => this.write(w)));
  }

  private async write(w: Write) {
    const plantId = IDS[w.id]!;
    const path = `/plants/${plantId}`;
    const plants = this.plants[w.account]!;
    const current = plants.get(plantId);
    const context = `${JSON.stringify(w)} on ${current ? JSON.stringify(current) : 'no plant'}`;

    if (w.kind === 'create') {
      const sent = w.replay && current ? asPlant(current) : this.newPlant(w.account, plantId, TAGS[w.tag]);
      const body = `{"id":${plantId},"name":${JSON.stringify(sent.name)}${'tag' in sent ? `,"tag":${JSON.stringify(sent.tag)}` : ''}}`;
      const reply = await this.request(w.account, '/plants', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      if (current === undefined) {
        assert.equal(reply.status, 200, `${context}: ${reply.text}`);
        assert.deepEqual(reply.json, sent, context);
        plants.set(plantId, { ...sent });
      } else if (JSON.stringify(asPlant(current)) === JSON.stringify(sent)) {
        assert.equal(reply.status, 200, `${context}: a safe retry: ${reply.text}`);
        assert.deepEqual(reply.json, asPlant(current), context);
      } else {
        assert.equal(reply.status, 409, `${context}: ${reply.text}`);
      }
      return;
    }

    const headers: Record<string, string> = {};
    if (w.ifMatch === 'current' && current) headers['if-match'] = current.etag ?? (await this.get(w.account, plantId))!;
    if (w.ifMatch === 'stale') headers['if-match'] = this.staleTags[w.account]!.get(plantId) ?? '"never-issued"';
    const refused = w.ifMatch === 'stale';

    if (w.kind === 'delete') {
      const reply = await this.request(w.account, path, { method: 'DELETE', headers });
      if (current === undefined) return assert.equal(reply.status, 404, `${context}: ${reply.text}`);
      if (refused) return assert.equal(reply.status, 412, `${context}: ${reply.text}`);
      assert.equal(reply.status, 204, `${context}: ${reply.text}`);
      plants.delete(plantId);
      if (current.etag) this.staleTags[w.account]!.set(plantId, current.etag);
      return;
    }

    const patch: { name?: string; tag?: string | null } = {};
    if (w.rename) patch.name = this.newPlant(w.account, plantId, undefined).name;
    if (w.tag === 'remove') patch.tag = null;
    else if (w.tag !== 'keep' && TAGS[w.tag] !== undefined) patch.tag = TAGS[w.tag]!;
    const reply = await this.request(w.account, path, {
      method: 'PATCH',
      headers: { ...headers, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify(patch),
    });
    if (current === undefined) return assert.equal(reply.status, 404, `${context}: ${reply.text}`);
    if (refused) return assert.equal(reply.status, 412, `${context}: ${reply.text}`);
    assert.equal(reply.status, 200, `${context}: ${reply.text}`);
    const after: ModelPlant = { name: patch.name ?? current.name };
    const tagAfter = patch.tag === null ? undefined : (patch.tag ?? current.tag);
    if (tagAfter !== undefined) after.tag = tagAfter;
    assert.deepEqual(reply.json, asPlant(after), context);
    const etag = reply.headers.get('etag');
    assert.ok(etag, `${context}: PATCH answers the ETag`);
    const changed = JSON.stringify(asPlant(after)) !== JSON.stringify(asPlant(current));
    if (current.etag !== undefined) {
      if (changed) assert.notEqual(etag, current.etag, `${context}: a change moves the ETag`);
      else assert.equal(etag, current.etag, `${context}: a PATCH that changes nothing keeps the ETag`);
    }
    if (changed && current.etag) this.staleTags[w.account]!.set(plantId, current.etag);
    plants.set(plantId, { ...after, etag });
  }

  private newPlant(account: number, plantId: bigint, tag: string | undefined) {
    const name = `${ACCOUNTS[account]} ${plantId} v${++this.version}`;
    return tag === undefined ? { name } : { name, tag };
  }

  /** GET /plants/{id} against the model; returns the ETag when there is a plant. */
  private async get(account: number, plantId: bigint): Promise<string | undefined> {
    const reply = await this.request(account, `/plants/${plantId}`);
    const expected = this.plants[account]!.get(plantId);
    const context = `GET ${plantId} as ${ACCOUNTS[account]}`;
    if (expected === undefined) {
      assert.equal(reply.status, 404, `${context}: ${reply.text}`);
      return undefined;
    }
    assert.equal(reply.status, 200, `${context}: ${reply.text}`);
    assert.deepEqual(reply.json, asPlant(expected), context);
    const etag = reply.headers.get('etag')!;
    if (expected.etag !== undefined) assert.equal(etag, expected.etag, `${context}: the ETag is the one last seen`);
    expected.etag = etag;
    return etag;
  }

  /**
   * One page, checked against the model as it is now: the first `limit` plants after `after`,
   * with a next link exactly when more remain. Returns the page's ids and its next link.
   */
  private async page(account: number, path: string, after: bigint | null, limit: number) {
    const reply = await this.request(account, path);
    assert.equal(reply.status, 200, reply.text);
    const remaining = [...this.plants[account]!.keys()].filter((i) => after === null || i > after).sort(byId);
    const ids = remaining.slice(0, limit);
    const context = `page ${path} of ${ACCOUNTS[account]}`;
    assert.deepEqual(
      reply.json,
      ids.map((i) => asPlant(this.plants[account]!.get(i)!)),
      context,
    );
    const next = nextLink(reply);
    assert.equal(next !== null, remaining.length > limit, `${context}: a next link exactly when more remain`);
    return { ids, next };
  }

  /** Follows next links, doing a group of writes between pages. */
  private async walk({ account, limit, between }: Extract<Step, { kind: 'walk' }>) {
    const atStart = new Set(this.plants[account]!.keys());
    const deleted = new Set<bigint>();
    const seen: bigint[] = [];
    let path = `/plants?limit=${limit}`;
    let after: bigint | null = null;
    for (let i = 0; ; i++) {
      const { ids, next } = await this.page(account, path, after, limit);
      seen.push(...ids);
      if (next === null) break;
      after = ids[ids.length - 1]!;
      path = next.slice(this.base.length);
      const group = between[i] ?? [];
      const before = new Set(this.plants[account]!.keys());
      await this.writes(group);
      for (const gone of before) if (!this.plants[account]!.has(gone)) deleted.add(gone);
    }
    assert.equal(new Set(seen).size, seen.length, 'paging never returns a plant twice');
    assert.deepEqual(seen, [...seen].sort(byId), 'pages come in ascending id order');
    for (const throughout of atStart) {
      if (!deleted.has(throughout))
        assert.ok(seen.includes(throughout), `plant ${throughout} existed throughout and was visited`);
    }
  }

  /** The whole streamed listing of an account against the model. */
  async checkListing(account: number) {
    const reply = await this.request(account, '/plants');
    assert.equal(reply.status, 200, reply.text);
    const expected = [...this.plants[account]!.keys()].sort(byId).map((i) => asPlant(this.plants[account]!.get(i)!));
    assert.deepEqual(reply.json, expected, `the full listing of ${ACCOUNTS[account]}`);
  }
}

const RUNS = scaled(15, 60);

for (const engine of ENGINES) {
  describe(`random interleavings of create, PATCH, DELETE and paging by several accounts match a model (${engine.name})`, () => {
    const s = realServer(engine);
    const tokens: string[] = [];
    before(async () => {
      for (const name of ACCOUNTS) tokens.push((await createToken(s.database, name)).token);
    });

    it(
      `no leak, no stale page, no lost change, no repeated or skipped plant while paging (${RUNS} runs)`,
      { timeout: 300_000 },
      async (t) => {
        let runs = 0;
        await fc.assert(
          fc.asyncProperty(fc.array(step, { minLength: 30, maxLength: 60 }), async (steps) => {
            runs++;
            const run = new Run(s.url, tokens);
            await run.reset();
            for (const one of steps) await run.step(one);
            for (let a = 0; a < ACCOUNTS.length; a++) await run.checkListing(a);
          }),
          { numRuns: RUNS, interruptAfterTimeLimit: 240_000, markInterruptAsFailure: true },
        );
        t.diagnostic(`${runs} runs`);
      },
    );
  });
}
