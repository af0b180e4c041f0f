// Parses each Mermaid file given with Mermaid's own parser; exit 1 on any error.
import { JSDOM } from 'jsdom';
import fs from 'fs';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

let bad = 0;
for (const file of process.argv.slice(2)) {
  try {
    const r = await mermaid.parse(fs.readFileSync(file, 'utf8'));
    console.log(`${file}: ok ${r.diagramType}`);
  } catch (e) {
    bad++;
    console.log(`${file}: ERROR ${e.message.split('\n').slice(0, 4).join(' | ')}`);
  }
}
process.exit(bad ? 1 : 0);
