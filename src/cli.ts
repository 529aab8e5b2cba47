#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { backupCommand } from './cli/backup-command.js';
import { copyCommand } from './cli/copy-command.js';
import { tokenCommand } from './cli/token-commands.js';
import { BAD_SETTING_EXIT, ConfigError, serverSettings, toOption, type Config } from './config.js';
import { checkConfig } from './config/check.js';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from './storage/postgres/migrations.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './storage/sqlite/migrations.js';
import { VERSION } from './version.js';

/** The release and the schema version it brings each engine's store to (CHANGELOG.md names both). */
const VERSION_LINE = `${VERSION} (schema version: SQLite ${SQLITE_MIGRATIONS.length}, PostgreSQL ${POSTGRES_MIGRATIONS.length})`;

/** Listening failures that mean --host/--port cannot work here: a bad setting too. */
const BAD_ADDRESS_CODES = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN']);

function forEachCommand(command: Command, apply: (command: Command) => void) {
  apply(command);
  for (const sub of command.commands) forEachCommand(sub, apply);
}

/**
 * Traces are set by OpenTelemetry's own environment variables (no flags: the SDK reads them), so
 * --help names them here; docs/operating.md#traces says what each does.
 */
const TRACES_HELP = `
Traces (environment variables only, the OpenTelemetry SDK's own; off unless an endpoint is set):
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   OTLP/HTTP receiver (turns traces on)
  OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL   http/json only
  OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS     key=value,... sent with each export
  OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION        milliseconds per export; gzip
  OTEL_EXPORTER_OTLP_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES                        service.name (plant-store), more attributes
  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG                      e.g. parentbased_traceidratio and 0.1
  OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_EXPORT_TIMEOUT
  OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none               traces off although an endpoint is set`;

function program(): Command {
  const root = new Command('plant-store')
    .description('The OpenAPI Plant Store service. Flags win over environment variables.')
    .version(VERSION_LINE, '-V, --version', 'print the version and the schema version, and exit');

  const serveCommand = new Command('serve').description('run the HTTP server (the default command)');
  for (const spec of Object.values(serverSettings)) serveCommand.addOption(toOption(spec));
  serveCommand.action(async (options: Config) => {
    const config = checkConfig(options);
    // Loaded only to serve, so the token commands start fast.
    const { serve } = await import('./server.js');
    await serve(config);
  });

  root.addCommand(serveCommand, { isDefault: true });
  serveCommand.addHelpText('after', TRACES_HELP);
  root.addHelpText(
    'after',
    () => `\nSettings of serve (the default command):\n${serveCommand.helpInformation()}${TRACES_HELP}`,
  );
  root.addCommand(tokenCommand());
  root.addCommand(copyCommand());
  root.addCommand(backupCommand());
  forEachCommand(root, (command) =>
    command.exitOverride().configureOutput({ outputError: (text, write) => write(oneLine(text)) }),
  );
  return root;
}

/**
 * Commander's error on one line: its first, with the suggestion it writes on a line of its own
 * (`(Did you mean --port?)`, from `showSuggestionAfterError`) kept after it.
 */
function oneLine(text: string): string {
  const [first, ...rest] = text.trimEnd().split('\n');
  const suggestion = rest.map((line) => /^\(Did you mean (.+)\?\)$/.exec(line.trim())?.[1]).find(Boolean);
  return `${first}${suggestion === undefined ? '' : ` (did you mean ${suggestion}?)`}\n`;
}

/**
 * `plant-store bogus`: serve, the default command, would take the word for an argument and complain
 * about that; name it for what it is, with the commands there are.
 */
function unknownCommand(cli: Command, argv: string[]): string | undefined {
  const word = argv[2];
  if (word === undefined || word.startsWith('-')) return undefined;
  const names = [...cli.commands.map((command) => command.name()), 'help'];
  if (names.includes(word)) return undefined;
  const list = names.map((name) => (name === 'serve' ? 'serve (the default)' : name)).join(', ');
  return `unknown command '${word}'; the commands are ${list} (plant-store --help says more)`;
}

async function main() {
  const cli = program();
  const unknown = unknownCommand(cli, process.argv);
  if (unknown !== undefined) {
    process.stderr.write(`plant-store: error: ${unknown}\n`);
    process.exit(BAD_SETTING_EXIT);
  }
  try {
    await cli.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exit(error.exitCode === 0 ? 0 : BAD_SETTING_EXIT);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`plant-store: error: ${error.message}\n`);
      process.exit(BAD_SETTING_EXIT);
    }
    if (BAD_ADDRESS_CODES.has((error as { code?: string }).code ?? '')) {
      process.stderr.write(
        `plant-store: error: cannot listen (check --host and --port): ${(error as Error).message}\n`,
      );
      process.exit(BAD_SETTING_EXIT);
    }
    process.stderr.write(`plant-store: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

await main();
