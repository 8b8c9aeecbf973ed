import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { REPORT_SCRIPT_MODULE, reportScriptModule } from '../../scripts/report-script.js';
import { PAGE_SCRIPT } from '../../src/report/page-script.generated.js';

describe('the report page script', () => {
  it('is committed as a fresh bundle of src/report/browser/page-script.ts (npm run build:report-script)', async () => {
    expect(await readFile(REPORT_SCRIPT_MODULE, 'utf8')).toBe(await reportScriptModule());
  });

  it('is one browser script that cannot close its <script> element early', () => {
    expect(PAGE_SCRIPT).toContain('getElementById("report-data")');
    expect(PAGE_SCRIPT).not.toContain('</script');
    expect(PAGE_SCRIPT).not.toMatch(/\bimport\b.*\bfrom\b/);
  });
});
