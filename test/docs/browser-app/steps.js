// What a web app does with the client library, step by step; the browser test runs it in a page
// (test/docs/browser-cors.test.ts). Plain JavaScript: the page imports it as it is.
// Each step returns what it saw; a step that fails throws, and the test reports which.

/** The steps, in order. */
export const STEPS = ['create', 'list', 'filterCount', 'page', 'updateIfMatch', 'remove', 'batch', 'feed'];

/** Runs every step with `client` (a PlantStore); resolves with { step: result }. */
export async function runSteps(client) {
  const results = {};
  const feed = client.streamEvents();
  const ready = await feed.next();
  results.ready = ready.value.type;
  for (const step of STEPS) {
    try {
      results[step] = await STEP[step](client, feed);
    } catch (error) {
      throw new Error(`step ${step}: ${error?.message}`);
    }
  }
  await feed.return(undefined);
  return results;
}

const BIG = 9007199254740993n;

const STEP = {
  async create(client) {
    await client.addPlant({ id: BIG, name: 'Monstera', tag: 'aroid' });
    await client.addPlant({ id: 2n, name: 'Fern' });
    return (await client.addPlant({ id: 3n, name: 'Cactus', tag: 'dry' })).plant.name;
  },
  async list(client) {
    const page = await client.listPlants();
    return page.plants.map((plant) => plant.name);
  },
  async filterCount(client) {
    const page = await client.listPlants({ tag: ['dry', 'aroid'], q: 'CAC', count: true });
    return { names: page.plants.map((plant) => plant.name), total: page.total };
  },
  async page(client) {
    const names = [];
    for await (const plant of client.plants({ pageSize: 1 })) names.push(plant.name);
    return names;
  },
  async updateIfMatch(client) {
    const { etag } = await client.getPlant(BIG);
    const updated = await client.updatePlant(BIG, { tag: 'climber' }, { ifMatch: etag });
    let stale = 0;
    try {
      await client.updatePlant(BIG, { tag: 'again' }, { ifMatch: etag });
    } catch (error) {
      stale = error.status;
    }
    return { tag: updated.plant.tag, stale };
  },
  async remove(client) {
    await client.deletePlant(2n);
    return (await client.listPlants()).plants.length;
  },
  async batch(client) {
    const plants = await client.addPlants([
      { id: 10n, name: 'Aloe', tag: 'dry' },
      { id: 11n, name: 'Ivy' },
    ]);
    return plants.map((plant) => plant.name);
  },
  async feed(_client, feed) {
    const seen = [];
    while (seen.length < 7) {
      const { value } = await feed.next();
      seen.push(`${value.type} ${value.plant.id}`);
    }
    return seen;
  },
};

/** What a run of every step must give. */
export const EXPECTED = {
  ready: 'ready',
  create: 'Cactus',
  list: ['Fern', 'Cactus', 'Monstera'],
  filterCount: { names: ['Cactus'], total: 1 },
  page: ['Fern', 'Cactus', 'Monstera'],
  updateIfMatch: { tag: 'climber', stale: 412 },
  remove: 2,
  batch: ['Aloe', 'Ivy'],
  feed: [
    `plant.created ${BIG}`,
    'plant.created 2',
    'plant.created 3',
    `plant.updated ${BIG}`,
    'plant.deleted 2',
    'plant.created 10',
    'plant.created 11',
  ],
};
