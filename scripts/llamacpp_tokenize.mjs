// llama.cpp's own token ids for texts, a reference for scripts/make_gguf_tokenizer_golden.py.
//
// Runs llama.cpp (the prebuilt CPU binary the node-llama-cpp package ships) on a GGUF
// file's vocabulary only. Development only; never run by the app or the tests.
//   node scripts/llamacpp_tokenize.mjs NODE_DIR FILE.gguf < texts.json > ids.json
// NODE_DIR is a folder where `npm install node-llama-cpp` ran; texts.json is a JSON
// object name -> text, and the answer maps each name to its ids. Special tokens in the
// text are parsed (llama_tokenize's parse_special); BOS and EOS are not added.
import {readFileSync} from "node:fs";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const [nodeDir, gguf] = process.argv.slice(2);
const entry = join(nodeDir, "node_modules", "node-llama-cpp", "dist", "index.js");
const {getLlama} = await import(pathToFileURL(entry).href);
const llama = await getLlama({gpu: false, build: "never"});
const model = await llama.loadModel({modelPath: gguf, vocabOnly: true});
const texts = JSON.parse(readFileSync(0, "utf8"));
const ids = Object.fromEntries(
  Object.entries(texts).map(([name, text]) => [name, Array.from(model.tokenize(text, true))]),
);
process.stdout.write(JSON.stringify(ids));
await model.dispose();
await llama.dispose();
