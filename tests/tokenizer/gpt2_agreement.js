// Independent reference for tests/tokenizer/gpt2_agreement.sh: encodes the same documents with the
// npm package gpt-3-encoder (OpenAI's GPT-2 encoder ported to JavaScript) and compares them, token
// by token, with the shard written by `depthbench tokenize`.
// usage: node gpt2_agreement.js NPM_PREFIX OUR_SHARD(headerless uint16, .u16) FORTUNES_FILE...
'use strict';
const fs = require('fs');
const path = require('path');

const [prefix, ourShard, ...files] = process.argv.slice(2);
const encoder = require(path.resolve(prefix, 'node_modules', 'gpt-3-encoder'));
const EOD = 50256;

// Fortunes documents exactly as src/tokenizer/documents.cpp cuts them: runs of lines between
// lines that are "%" (a trailing '\r' ignored), each line keeping its '\n'; empty runs dropped.
function fortunesDocuments(text) {
  const docs = [];
  let pos = 0, docStart = 0;
  while (pos < text.length) {
    const newline = text.indexOf('\n', pos);
    const lineEnd = newline < 0 ? text.length : newline;
    let line = text.slice(pos, lineEnd);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    const next = newline < 0 ? text.length : newline + 1;
    if (line === '%') {
      if (pos > docStart) docs.push(text.slice(docStart, pos));
      docStart = next;
    }
    pos = next;
  }
  if (text.length > docStart) docs.push(text.slice(docStart));
  return docs;
}

const docs = [];
for (const f of files) docs.push(...fortunesDocuments(fs.readFileSync(f, 'utf8')));

const start = process.hrtime.bigint();
const reference = docs.map(d => encoder.encode(d));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
let referenceTokens = 0;
for (const r of reference) referenceTokens += r.length + 1;  // + end-of-document

const buffer = fs.readFileSync(ourShard);
const ours = new Uint16Array(buffer.buffer, buffer.byteOffset, buffer.length / 2);
let pos = 0, mismatchedDocs = 0, mismatchedTokens = 0, shown = 0;
for (let d = 0; d < docs.length; ++d) {
  let end = ours.indexOf(EOD, pos);
  if (end < 0) end = ours.length;
  const mine = ours.subarray(pos, end);
  const ref = reference[d];
  let differ = Math.abs(mine.length - ref.length);
  for (let i = 0; i < Math.min(mine.length, ref.length); ++i) differ += mine[i] !== ref[i];
  if (differ) {
    ++mismatchedDocs;
    mismatchedTokens += differ;
    if (shown++ < 5)
      console.log(`mismatch in document ${d}: ${JSON.stringify(docs[d].slice(0, 120))}\n` +
                  `  js:  ${ref.slice(0, 40).join(' ')}\n  c++: ${Array.from(mine.slice(0, 40)).join(' ')}`);
  }
  pos = end + 1;
}
const extra = Math.max(0, ours.length - pos);
console.log(`documents ${docs.length} js_tokens ${referenceTokens} cpp_tokens ${ours.length} ` +
            `mismatched_documents ${mismatchedDocs} mismatched_tokens ${mismatchedTokens + extra}`);
console.log(`js_seconds ${seconds.toFixed(3)} js_tokens_per_second ${(referenceTokens / seconds).toFixed(0)}`);
process.exit(mismatchedDocs === 0 && extra === 0 && ours.length === referenceTokens ? 0 : 1);
