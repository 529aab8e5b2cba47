import type { Storage } from '../../src/storage/types.js';
import type { PlantRecord } from '../../src/storage/types/plants.js';

export interface PlantWrite {
  account: string;
  plant: PlantRecord;
}

/** Creates straight through storage (one transaction), as `{ created, stored }` without revisions. */
export async function insertPlants(
  storage: Storage,
  writes: PlantWrite[],
): Promise<{ created: boolean; stored: PlantRecord }[]> {
  const outcomes = await storage.applyChanges(
    writes.map(({ account, plant }, i) => ({
      kind: 'create',
      account,
      plant: { ...plant, revision: 1n },
      eventId: `msg_test_${i}`,
    })),
  );
  return outcomes.map((outcome) => {
    if (outcome.status !== 'applied' && outcome.status !== 'unchanged') throw new Error(`create ${outcome.status}`);
    const { revision: _, ...stored } = outcome.plant;
    return { created: outcome.status === 'applied', stored };
  });
}
