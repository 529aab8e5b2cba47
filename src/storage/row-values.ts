/**
 * How each engine hands back the values the two keep differently, so that one row type and one
 * mapper per table serve both (token-rows.ts, webhook-rows.ts): a time (PostgreSQL's timestamptz
 * arrives as a `Date`, SQLite keeps epoch milliseconds), a list of words (a `text[]`, or one
 * space-separated string) and a flag (a boolean, or 0/1).
 */
export interface RowValues<Time, Words, Flag> {
  date(time: Time): Date;
  words(words: Words): string[];
  flag(flag: Flag): boolean;
}

export const SQLITE_VALUES: RowValues<number, string, number> = {
  date: (ms) => new Date(ms),
  words: (text) => text.split(' ').filter(Boolean),
  flag: (bit) => bit === 1,
};

export const POSTGRES_VALUES: RowValues<Date, string[], boolean> = {
  date: (date) => date,
  words: (words) => words,
  flag: (flag) => flag,
};
