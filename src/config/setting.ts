import { Option } from 'commander';

/** One setting: its flag, its environment variable, its default, how its text is parsed and what `--help` says. */
export interface SettingSpec<T> {
  flag: string;
  env: string;
  help: string;
  /** The default value, where --help shows it as itself (a number, a word). */
  default?: T;
  /**
   * The default as one would write it (`10s`, `on`), where that differs from the value: the value
   * is parsed from it, so the two cannot disagree. A setting has `default` or `defaultText`, not both.
   */
  defaultText?: string;
  parse: (text: string) => T;
}

/** A setting's default value, or undefined when it has none. */
export function defaultOf<T>(spec: SettingSpec<T>): T | undefined {
  if (spec.default !== undefined) return spec.default;
  return spec.defaultText === undefined ? undefined : spec.parse(spec.defaultText);
}

export function toOption(spec: SettingSpec<unknown>): Option {
  const option = new Option(spec.flag, spec.help).env(spec.env).argParser((value: string) => spec.parse(value));
  const value = defaultOf(spec);
  if (value !== undefined) option.default(value, spec.defaultText);
  return option;
}

/** The exit status for a setting that cannot work. */
export const BAD_SETTING_EXIT = 2;

/** Thrown for a combination of settings that cannot work; the CLI prints it and exits 2. */
export class ConfigError extends Error {}
