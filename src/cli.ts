#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { backupCommand } from './cli/backup-command.js';
import { copyCommand } from './cli/copy-command.js';
import { tokenCommand } from './cli/token-commands.js';
import { BAD_SETTING_EXIT, ConfigError, serverSettings, toOption, type Config } from './config.js';
import { checkConfig } from './config/check.js';

/** Listening failures that mean --host/--port cannot work here: a bad setting too. */
const BAD_ADDRESS_CODES = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN']);

function forEachCommand(command: Command, apply: (command: Command) => void) {
  apply(command);
  for (const sub of command.commands) forEachCommand(sub, apply);
}

function program(): Command {
  const root = new Command('plant-store').description(
    'The OpenAPI Plant Store service. Flags win over environment variables.',
  );

  const serveCommand = new Command('serve').description('run the HTTP server (the default command)');
  for (const spec of Object.values(serverSettings)) serveCommand.addOption(toOption(spec));
  serveCommand.action(async (options: Config) => {
    const config = checkConfig(options);
    // Loaded only to serve, so the token commands start fast.
    const { serve } = await import('./server.js');
    await serve(config);
  });

  root.addCommand(serveCommand, { isDefault: true });
  root.addHelpText('after', () => `\nSettings of serve (the default command):\n${serveCommand.helpInformation()}`);
  root.addCommand(tokenCommand());
  root.addCommand(copyCommand());
  root.addCommand(backupCommand());
  forEachCommand(root, (command) =>
    command
      .exitOverride()
      .configureOutput({ outputError: (text, write) => write(text.trimEnd().split('\n')[0] + '\n') }),
  );
  return root;
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
