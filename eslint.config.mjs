import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

// Workflow code must replay deterministically: no Node built-ins, and activities, providers and other
// I/O modules only as types (proxyActivities gives the callable side).
const ioModules = [
  'activities',
  'providers',
  'src/codec',
  'src/secrets',
  'src/worker',
  'src/client',
  'src/cli',
  'src/dev',
  'src/tools',
  'src/util',
  'src/config',
];
const workflowImportRules = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: builtinModules
        .flatMap((m) => [m, `node:${m}`])
        .map((name) => ({ name, message: 'workflow code is deterministic: no Node built-ins' })),
      patterns: [
        ...ioModules.map((dir) => ({
          regex: `(^|/)${dir.replace('/', '\\/')}(/|$)`,
          allowTypeImports: true,
          message: `workflow code may import ${dir}/ with 'import type' only; call activities through proxyActivities`,
        })),
      ],
    },
  ],
};

// The contract (messages, IDs, shared types) sits under everything else: it imports nothing of capt's
// but the API model, so every arrow points one way.
const contractImportRules = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      patterns: [
        'workflows',
        'activities',
        'providers',
        'src/client',
        'src/cli',
        'src/worker',
        'src/dev',
        'src/secrets',
        'src/util',
        'src/config',
        'src/tools',
      ].map((dir) => ({
        regex: `(^|/|\\.\\./)${dir.replace('src/', '').replace('/', '\\/')}(/|$)`,
        message: `src/contract/ imports nothing of capt's but src/api; move what it needs from ${dir}/ into the contract`,
      })),
    },
  ],
};

// Imports point one way: foundation (src/ but its entry points) -> workflows, activities, providers ->
// entry points (src/cli, src/client, src/worker, src/dev). Activities and providers share the foundation's
// libraries (src/kube, src/etcd, src/pki), never each other.
const restrict = (dirs, message) => ({
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      patterns: dirs.map((dir) => ({ regex: `(^|/)${dir.replace('/', '\\/')}(/|$)`, message: message(dir) })),
    },
  ],
});
const entryPoints = ['src/cli', 'src/client', 'src/worker', 'src/dev', 'src/bridge'];
const entryPointRelative = ['cli', 'client', 'worker', 'dev', 'bridge'].map((d) => `\\.\\./${d}`);
const foundationImportRules = restrict(
  ['workflows', 'activities', 'providers', ...entryPoints, ...entryPointRelative],
  (dir) => `src/'s foundation imports nothing above it (${dir.replace(/\\/g, '')}); move what both need into src/`,
);
const activityImportRules = restrict(
  ['workflows', 'providers', ...entryPoints],
  (dir) => `activities import only the foundation (src/), not ${dir}`,
);
const providerImportRules = restrict(
  ['workflows', 'activities', ...entryPoints],
  (dir) =>
    `providers import only the foundation (src/), not ${dir}; shared clients live in src/kube, src/etcd, src/pki`,
);
// The spec rules run in the manifest loader and in workflows' validators alike: pure, and as low as the contract.
const specRulesImportRules = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: workflowImportRules['@typescript-eslint/no-restricted-imports'][1].paths,
      patterns: contractImportRules['@typescript-eslint/no-restricted-imports'][1].patterns.map((p) => ({
        ...p,
        message: p.message.replace(
          "src/contract/ imports nothing of capt's but src/api",
          "src/spec-rules/ imports nothing of capt's but src/api and src/contract",
        ),
      })),
    },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'tools/**', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  { files: ['workflows/**/*.ts', 'test/workflows/**/*.ts'], rules: workflowImportRules },
  { files: ['src/**/*.ts'], ignores: entryPoints.map((d) => `${d}/**`), rules: foundationImportRules },
  { files: ['activities/**/*.ts'], rules: activityImportRules },
  { files: ['providers/**/*.ts'], rules: providerImportRules },
  { files: ['src/contract/**/*.ts'], rules: contractImportRules },
  { files: ['src/spec-rules/**/*.ts'], rules: specRulesImportRules },
);
