// The import rules of the repository, checked by `pnpm -s deps` (scripts/test.sh runs it before the
// tests). Why each rule exists: docs/decisions.md, "Dependency rules". Type-only imports count
// (tsPreCompilationDeps): a cycle of types still ties the files' meaning together.

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'No import cycle, type-only ones included: each file can be read after the files it imports.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-nothing-of-ours',
      comment: 'packages/core is pure policy: it imports no other package, app, test or bench file of ours.',
      severity: 'error',
      from: { path: '^packages/core/' },
      to: { path: '^(apps|bench|test|packages/(?!core/))' },
    },
    {
      name: 'apps-never-import-each-other',
      comment: 'An app is a process of its own; what two apps share belongs in a package.',
      severity: 'error',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/', pathNot: '^apps/$1/' },
    },
    {
      name: 'packages-never-import-apps',
      comment:
        'Packages are the layer below the apps: an arrow from a package to an app points back up. ' +
        "A package's build scripts (packages/client/scripts: the OpenAPI document of the gateway) are tooling.",
      severity: 'error',
      from: { path: '^packages/[^/]+/(src|test)/' },
      to: { path: '^(apps|bench|test)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'Every import resolves (a typo or a missing dependency fails here, not at run time).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|coverage|\\.local)/|^bench/out/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.d.ts'],
    },
  },
};
