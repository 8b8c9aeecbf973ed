import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { chartJsSource } from './chart-library.js';
import { renderReportHtml } from './render-html.js';
import { loadReportData, type ReportData, type ReportOptions } from './report-data.js';

/** The report page for a warehouse: its data, and the HTML that shows it. */
export async function buildReport(
  db: Kysely<Database>,
  options: ReportOptions,
  now: Date = new Date(),
): Promise<{ html: string; data: ReportData }> {
  const data = await loadReportData(db, options, now);
  return { html: renderReportHtml(data, await chartJsSource()), data };
}
