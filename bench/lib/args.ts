import { parseArgs } from 'node:util';

// Common flags of every figure script: --quick (fewer, shorter runs) and --runs N.

export interface FigureArgs {
  quick: boolean;
  runs: number;
  profile: boolean;
  values: Record<string, string | boolean | undefined>;
}

/** The figure's command line: --quick, --runs. */
export function figureArgs(defaults: { runs: number; quickRuns: number }): FigureArgs {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      runs: { type: 'string' },
      profile: { type: 'boolean', default: false },
    },
    strict: false,
  });
  const quick = values.quick === true;
  const runs =
    typeof values.runs === 'string'
      ? Number.parseInt(values.runs, 10)
      : quick
        ? defaults.quickRuns
        : defaults.runs;
  return { quick, runs, profile: values.profile === true, values };
}
