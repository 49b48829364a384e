/**
 * A `require` that resolves from this package's own folder, for optional peers that are loaded
 * on first use (`@opentelemetry/api`). A CommonJS file has its own `require` in both builds of
 * the package (ESM in `dist/`, CommonJS in `dist/cjs/`), so neither build needs `import.meta`,
 * which CommonJS output cannot contain.
 */
const packageRequire: NodeJS.Require = require;
export = packageRequire;
