import { resolve } from 'node:path';
import { EngramError } from '../../../kernel/errors.js';
import {
  defaultSkillsDirectory,
  listProcedureSkills,
  removeProcedureSkills,
  syncProcedureSkills,
} from '../../claude-code/skills/procedure-skills.js';
import { stringOption, type CommandDefinition } from '../cli-command.js';
import { scopeOption, withEngram } from '../cli-engram.js';

const ACTIONS = ['sync', 'list', 'remove'] as const;

/** `engram skills`: procedures as Claude Code skills, in skill folders engram owns. */
export const skillsCommand: CommandDefinition = {
  name: 'skills',
  summary: "Write each procedure memory as a Claude Code skill (sync), list engram's skills, or remove them",
  usage: 'skills sync|list|remove [--dir <skills folder>] [--scope <scopes>]',
  options: {
    dir: {
      type: 'string',
      valueName: 'path',
      description: 'The skills folder (default $CLAUDE_CONFIG_DIR/skills or ~/.claude/skills)',
    },
    scope: {
      type: 'string',
      valueName: 'scopes',
      description: "Whose procedures sync writes (default the project's and global)",
    },
  },
  details:
    'Each procedure memory becomes <dir>/engram-<name>/SKILL.md with its name and a one-line description, which Claude Code shows the model. ' +
    'Every folder engram writes holds a .engram-skill.json marker: sync rewrites a skill when its memory changed and removes it when the memory ' +
    "was forgotten; remove deletes only engram's folders. A skill folder of your own is never touched, even one whose name engram wanted.",
  async run(invocation) {
    const { values, positionals } = invocation;
    const action = (positionals[0] ?? '') as (typeof ACTIONS)[number];
    if (!ACTIONS.includes(action) || positionals.length !== 1)
      throw new EngramError(
        'INVALID_INPUT',
        `Usage: engram skills sync|list|remove [--dir <path>]${positionals.length > 1 ? ' (one action)' : ''}.`,
      );
    const given = stringOption(values, 'dir');
    const dir = given === undefined ? defaultSkillsDirectory(invocation.io.env) : resolve(invocation.io.cwd, given);
    if (action === 'list') {
      const skills = await listProcedureSkills({ dir });
      const lines = skills.map((skill) => `${skill.name}  ${skill.memoryId}  ${skill.scope}`);
      return {
        data: { dir, skills },
        text: skills.length === 0 ? `No engram skills in ${dir}.` : [`engram skills in ${dir}:`, ...lines].join('\n'),
      };
    }
    if (action === 'remove') {
      const removed = await removeProcedureSkills({ dir });
      return { data: removed, text: `Removed ${removed.removed.length} engram skill(s) from ${dir}.` };
    }
    return withEngram(invocation, async (opened) => {
      const scopes = scopeOption(values);
      const report = await syncProcedureSkills({ engram: opened.engram, dir, ...(scopes && { scopes }) });
      const text = [
        `Skills in ${dir}: ${report.added.length} added, ${report.updated.length} updated, ${report.removed.length} removed, ${report.unchanged.length} unchanged.`,
        ...report.skipped.map((skip) => `skipped ${skip.name}: ${skip.reason}`),
      ].join('\n');
      return { data: report, text };
    });
  },
};
