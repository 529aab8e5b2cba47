#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { tokenCommand } from './cli/token-commands.js';
import { ConfigError, checkConfig, serverSettings, toOption, type Config } from './config.js';
import { serve } from './server.js';

const BAD_SETTING_EXIT = 2;

function program(): Command {
  const root = new Command('plant-store')
    .description('The OpenAPI Plant Store service. Flags win over environment variables.')
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text.trimEnd().split('\n')[0] + '\n') });

  const serveCommand = new Command('serve').description('run the HTTP server (the default command)');
  for (const spec of Object.values(serverSettings)) serveCommand.addOption(toOption(spec));
  serveCommand.action(async (options: Config) => serve(checkConfig(options)));

  root.addCommand(serveCommand, { isDefault: true });
  root.addCommand(tokenCommand());
  return root;
}

async function main() {
  const cli = program();
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
    process.stderr.write(`plant-store: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

await main();
