import { redactStoreUrl } from '../../../adapters/postgres/postgres-connection-url.js';
import { loadSettings, type SettingSource } from '../../../node/load-settings.js';
import { SETTING_DEFINITIONS, getSetting } from '../../../kernel/settings.js';
import { noPositionals, type CommandDefinition } from '../cli-command.js';
import { globalSettingFlags } from '../cli-engram.js';
import { formatFields, formatTable } from '../table-format.js';

const MASK = '********';

/** Where a setting came from, in words. */
function describeSource(source: SettingSource | undefined): string {
  if (!source) return 'default';
  switch (source.kind) {
    case 'default':
      return 'default';
    case 'user-config':
      return `user config ${source.origin ?? ''}`.trim();
    case 'project-config':
      return `project config ${source.origin ?? ''}`.trim();
    case 'env':
      return `env ${source.origin ?? ''}`.trim();
    case 'flag':
      return 'flag';
  }
}

/** `engram config`: print every setting’s effective value and where it came from. */
export const configCommand: CommandDefinition = {
  name: 'config',
  summary: 'Print every setting’s effective value and where it came from',
  usage: 'config [options]',
  options: {},
  details:
    'Layers, weakest first: defaults, ~/.engram/config.json (ENGRAM_HOME moves it), the project’s .engram.json, environment variables, flags. Secrets are masked.',
  async run(invocation) {
    const { io, global } = invocation;
    noPositionals(invocation);
    const loaded = loadSettings({ cwd: io.cwd, env: io.env, flags: globalSettingFlags(global) });
    const settings = SETTING_DEFINITIONS.map((definition) => {
      const raw = getSetting(loaded.settings, definition.path);
      const masked = definition.secret === true && raw !== '' && raw !== undefined;
      // A store URL is shown, not hidden, but never with its password.
      const shown = definition.path === 'store.url' && typeof raw === 'string' ? redactStoreUrl(raw) : raw;
      const source = loaded.sources[definition.path];
      return {
        path: definition.path,
        value: masked ? MASK : shown,
        source: source?.kind ?? 'default',
        ...(source?.origin !== undefined && { origin: source.origin }),
        ...(definition.env !== undefined && { env: definition.env }),
        ...(masked && { masked: true }),
        description: definition.description,
      };
    });
    const data = { home: loaded.home, project: loaded.project, settings };
    const header = formatFields([
      ['home', loaded.home],
      [
        'project',
        `${loaded.project.scope} (from ${loaded.project.source}${loaded.project.configFile ? `, ${loaded.project.configFile}` : ''})`,
      ],
    ]);
    const table = formatTable(
      [
        { header: 'SETTING', value: (row: (typeof settings)[number]) => row.path },
        {
          header: 'VALUE',
          value: (row) => (typeof row.value === 'string' ? row.value : JSON.stringify(row.value)),
          minWidth: 12,
        },
        { header: 'SOURCE', value: (row) => describeSource(loaded.sources[row.path]), minWidth: 10 },
        { header: 'ENV', value: (row) => row.env ?? '' },
      ],
      settings,
      { width: io.columns, color: io.color },
    );
    return { data, text: `${header}\n\n${table}` };
  },
};
