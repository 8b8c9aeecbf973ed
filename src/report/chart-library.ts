import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/**
 * The source of Chart.js (the `chart.js` package, MIT) as one browser script, to inline in the
 * page: the report opens without a network. Its UMD build defines `window.Chart`. The package
 * exports only its entry points, so the files beside them are found from there.
 */
export async function chartJsSource(): Promise<string> {
  const dist = path.dirname(require.resolve('chart.js'));
  const source = await readFile(path.join(dist, 'chart.umd.min.js'), 'utf8');
  const manifest = JSON.parse(await readFile(path.join(dist, '..', 'package.json'), 'utf8')) as {
    version?: string;
  };
  const version = manifest.version ?? '';
  // Inlined in a <script> element: the text must not close it early.
  return `/* Chart.js ${version} | MIT License | chartjs.org */\n${source.replaceAll('</script', '<\\/script')}`;
}
