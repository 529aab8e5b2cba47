/** The exit status for a setting that cannot work. */
export const BAD_SETTING_EXIT = 2;

/** Thrown for a combination of settings that cannot work; the CLI prints it and exits 2. */
export class ConfigError extends Error {}
