// Parses each file given with Mermaid's own parser (mermaid.parse, in a jsdom window, as a
// browser would) and prints its diagram type; exits 1 naming the first error of each file that
// does not parse. Used by the tests to check `moot export --format mermaid`.
import { JSDOM } from 'jsdom';
import { readFileSync } from 'node:fs';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
Object.defineProperty(globalThis, 'navigator', { value: dom.window.navigator, configurable: true });
const mermaid = (await import('mermaid')).default;
mermaid.initialize({ startOnLoad: false });

let failed = 0;
for (const file of process.argv.slice(2)) {
  try {
    const parsed = await mermaid.parse(readFileSync(file, 'utf8'));
    console.log(`${file}: ${parsed.diagramType}`);
  } catch (error) {
    failed += 1;
    console.log(`${file}: does not parse: ${String(error.message ?? error).slice(0, 600)}`);
  }
}
process.exit(failed ? 1 : 0);
