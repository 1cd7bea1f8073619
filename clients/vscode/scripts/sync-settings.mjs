// Keeps the extension's `tandem.*` settings in step with the server's: reads the JSON Schema
// that `tandem settings-schema` prints (committed as docs/settings.schema.json, which a cargo
// test keeps current), copies it into this folder (settings.schema.json, what the build ships for
// `jsonValidation`, so that a copy of clients/vscode builds outside the repository) and writes one
// `contributes.configuration` property per top-level key into package.json, with the schema's
// `$ref`s inlined (VS Code resolves none in a contribution). Outside the repository (no docs/)
// the folder's own copy is the source. `--check` changes nothing and fails when the copy or
// package.json is not what this would write.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DOCS_SCHEMA = new URL("../../../docs/settings.schema.json", import.meta.url);
const LOCAL_SCHEMA = new URL("../settings.schema.json", import.meta.url);
const PACKAGE = new URL("../package.json", import.meta.url);
const check = process.argv.includes("--check");
const inRepository = existsSync(fileURLToPath(DOCS_SCHEMA));
const schemaText = readFileSync(inRepository ? DOCS_SCHEMA : LOCAL_SCHEMA, "utf8");

// The extension's own settings come first and are not the server's.
const EXTENSION_SETTINGS = ["tandem.path", "tandem.trace.server"];
// Not settings a user sets from VS Code: `$schema` names the schema in a file, and the server
// reads `trustedFolders` from the user's settings file only.
const SKIPPED = new Set(["$schema", "trustedFolders"]);

const schema = JSON.parse(schemaText);
const manifest = JSON.parse(readFileSync(PACKAGE, "utf8"));

function inline(node, seen = []) {
  if (Array.isArray(node)) {
    return node.map((item) => inline(item, seen));
  }
  if (node === null || typeof node !== "object") {
    return node;
  }
  if (typeof node.$ref === "string") {
    const name = node.$ref.replace("#/$defs/", "");
    if (seen.includes(name)) {
      throw new Error(`recursive $ref ${node.$ref}: a contribution cannot hold it`);
    }
    const { $ref: _, ...rest } = node;
    return { ...inline(schema.$defs[name], [...seen, name]), ...inline(rest, seen) };
  }
  // A choice of constants (how schemars writes a documented enum) reads better in VS Code's
  // settings editor as `enum` with `enumDescriptions`.
  if (Array.isArray(node.oneOf) && node.oneOf.every((choice) => "const" in choice)) {
    const { oneOf, ...rest } = node;
    return {
      type: oneOf[0].type,
      enum: oneOf.map((choice) => choice.const),
      enumDescriptions: oneOf.map((choice) => choice.description ?? ""),
      ...inline(rest, seen),
    };
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, inline(value, seen)]));
}

const properties = {};
const existing = manifest.contributes.configuration.properties;
for (const key of EXTENSION_SETTINGS) {
  properties[key] = existing[key];
}
for (const [key, property] of Object.entries(schema.properties)) {
  if (!SKIPPED.has(key)) {
    const { description, ...rest } = inline(property);
    properties[`tandem.${key}`] = { ...rest, markdownDescription: description ?? "" };
  }
}
manifest.contributes.configuration.properties = properties;
manifest.contributes.jsonValidation = [
  { fileMatch: ["**/.tandem/settings.json", "**/tandem/settings.json"], url: "./dist/settings.schema.json" },
];

const wanted = JSON.stringify(manifest, null, 2) + "\n";
const localSchema = existsSync(fileURLToPath(LOCAL_SCHEMA)) ? readFileSync(LOCAL_SCHEMA, "utf8") : undefined;
if (check) {
  const stale = [];
  if (localSchema !== schemaText) {
    stale.push("clients/vscode/settings.schema.json is not docs/settings.schema.json");
  }
  if (readFileSync(PACKAGE, "utf8") !== wanted) {
    stale.push("clients/vscode/package.json's settings are not those of the settings schema");
  }
  if (stale.length > 0) {
    console.error(`${stale.join("; ")}: run \`npm run sync-settings\` in clients/vscode`);
    process.exit(1);
  }
} else {
  writeFileSync(LOCAL_SCHEMA, schemaText);
  writeFileSync(PACKAGE, wanted);
}
