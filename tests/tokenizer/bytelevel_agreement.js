// Independent reference for tests/tokenizer/bytelevel_agreement.sh: Hugging Face's own JavaScript
// tokenizers (npm @huggingface/tokenizers) encode the same documents from the same
// tokenizer.json as `depthbench tokenize`, and the two id streams are compared token by token.
//
//   node bytelevel_agreement.js corpus OUT_DIR
//       writes OUT_DIR/licenses.jsonl (the texts of /usr/share/common-licenses, one document
//       each) and OUT_DIR/mixed.jsonl (seeded documents mixing scripts, digits, emoji, white
//       space of every kind, contractions, code and special-token text)
//   node bytelevel_agreement.js compare NPM_PREFIX NAME TOKENIZER_JSON EOD SHARD CORPUS...
//       SHARD is our headerless uint32 output (.u32) of the CORPUS files in the order given;
//       exit 1 on any difference
'use strict';
const fs = require('fs');
const path = require('path');

function writeJsonl(file, docs) {
  fs.writeFileSync(file, docs.map(text => JSON.stringify({text})).join('\n') + '\n');
}

function licenseDocuments() {
  const dir = '/usr/share/common-licenses';
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).sort()
      .filter(name => !fs.lstatSync(path.join(dir, name)).isSymbolicLink())
      .map(name => fs.readFileSync(path.join(dir, name), 'utf8'));
}

// Pieces chosen to land on every branch of the Llama-3/Qwen/GPT-4o expressions. All characters
// are from Unicode 15.0 or older, so Node's ICU and the system ICU classify them alike.
const kPieces = [
  'The', 'quick', 'brown', 'fox', "DON'T", "we're", "I'VE", "they'll", "SHE'D", "it's", 'it’s',
  "o'clock", "'s", "'S", "''", 'naïve', 'café', 'Straße', 'İstanbul', 'ΚΑΛΗΜΈΡΑ', 'Привет',
  'мир', 'こんにちは', '世界', '你好', '한국어', 'مرحبا', 'שלום', 'नमस्ते', 'ภาษาไทย', 'Việt',
  'e\u0301', 'A\u030A', '\u212B', '\u1100\u1161\u11A8', 'ﬁ', '\u0301a', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '𠀀',
  '١٢٣', 'Ⅻ', '½', 'x²', '😀', '👍🏽', '👨\u200D👩\u200D👧', '🇩🇪', '❤️', '\u200B', '\uE000',
  '{', '}', '=>', '...', '—', '!!!', '?!', '/* c */', 'https://example.com/a?b=c&d=1', '<b>',
  '&amp;', '\\', '"', '`x`', '(x)', '[1]', '#include', 'def f(x):', '    return x',
  '<|endoftext|>', '<|im_start|>', '<think>', '<|begin_of_text|>', '<|end_of_text|>',
  'CamelCaseWord', 'snake_case_name', 'HTTPServer', 'ABC', 'aBc',
];
const kSpaces = [' ', ' ', ' ', ' ', '  ', '   ', '\t', '\n', '\r\n', '\n\n', '\n\n\n', ' \n ',
                 '\u00A0', '\u3000', '\u2028', '\u0085', '\u000B', '\u000C', '\uFEFF', ' \t\n'];

function mixedDocuments(count, seed) {
  let state = seed >>> 0;
  const random = () => {  // mulberry32
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = list => list[Math.floor(random() * list.length)];
  const digits = n => Array.from({length: n}, () => String(Math.floor(random() * 10))).join('');
  const docs = [];
  for (let d = 0; d < count; ++d) {
    let text = '';
    const pieces = 5 + Math.floor(random() * 120);
    for (let p = 0; p < pieces; ++p) {
      const r = random();
      if (r < 0.12) text += digits(1 + Math.floor(random() * 12));
      else if (r < 0.15) text += digits(2) + pick(['.', ',', '-', ':']) + digits(3);
      else if (r < 0.16) text += pick(['a', ' ', '-', '9', 'é']).repeat(50 + Math.floor(random() * 300));
      else text += pick(kPieces);
      text += random() < 0.6 ? pick(kSpaces) : (random() < 0.5 ? '' : pick(['.', ',', '!', '?']));
    }
    docs.push(text);
  }
  return docs;
}

function readJsonl(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(line => line.length)
      .map(line => JSON.parse(line).text).filter(text => text.length);
}

function compare(prefix, name, tokenizerJson, eod, shard, corpora) {
  const {Tokenizer} = require(path.resolve(prefix, 'node_modules', '@huggingface', 'tokenizers'));
  const json = JSON.parse(fs.readFileSync(tokenizerJson, 'utf8'));
  const configFile = path.join(path.dirname(tokenizerJson), 'tokenizer_config.json');
  const config = fs.existsSync(configFile) ? JSON.parse(fs.readFileSync(configFile, 'utf8')) : {};
  const tokenizer = new Tokenizer(json, config);
  const buffer = fs.readFileSync(shard);
  const ours = new Uint32Array(buffer.buffer, buffer.byteOffset, buffer.length / 4);
  let pos = 0, failed = false;
  for (const file of corpora) {
    const docs = readJsonl(file);
    let tokens = 0, mismatchedDocs = 0, shown = 0;
    for (const doc of docs) {
      const ref = tokenizer.encode(doc, {add_special_tokens: false}).ids;
      ref.push(eod);
      tokens += ref.length;
      const mine = ours.subarray(pos, pos + ref.length);
      pos += ref.length;
      let first = -1;
      for (let k = 0; k < ref.length && first < 0; ++k) if (mine[k] !== ref[k]) first = k;
      if (first < 0) continue;
      ++mismatchedDocs;
      if (shown++ < 3) {
        const from = Math.max(0, first - 3);
        console.log(`${name}: mismatch at token ${first} of ${JSON.stringify(doc.slice(0, 80))}` +
                    `\n  js:  ${ref.slice(from, first + 8).join(' ')}` +
                    `\n  c++: ${Array.from(mine.slice(from, first + 8)).join(' ')}`);
      }
    }
    console.log(`${name} ${path.basename(file, '.jsonl')}: documents ${docs.length} ` +
                `tokens ${tokens} mismatched_documents ${mismatchedDocs}`);
    failed = failed || mismatchedDocs > 0;
  }
  // After a mismatch the documents no longer line up; the lengths must agree in any case.
  console.log(`${name}: js_tokens ${pos} cpp_tokens ${ours.length} ` +
              `${!failed && pos === ours.length ? 'AGREE' : 'DIFFER'}`);
  return !failed && pos === ours.length ? 0 : 1;
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'corpus') {
  writeJsonl(path.join(args[0], 'licenses.jsonl'), licenseDocuments());
  writeJsonl(path.join(args[0], 'mixed.jsonl'), mixedDocuments(400, 20261130));
} else if (mode === 'compare') {
  const [prefix, name, tokenizerJson, eod, shard, ...corpora] = args;
  process.exit(compare(prefix, name, tokenizerJson, Number(eod), shard, corpora));
} else {
  console.error('usage: bytelevel_agreement.js corpus OUT_DIR | compare ...');
  process.exit(2);
}
