import type { PlantRecord } from '../storage/types/plants.js';

/** One page of GET /plants, as the service hands it to the route and the page cache keeps it. */
export interface Page {
  /** With their ids: the route writes each as `select` asks (select.ts). */
  plants: PlantRecord[];
  /** Cursor of the next page, or null when nothing remains. */
  next: string | null;
  /**
   * True when the page cache holds this very object and will hand it out again: nobody may
   * change it, and what is derived from it (its JSON text) is worth keeping beside it.
   */
  shared: boolean;
}
