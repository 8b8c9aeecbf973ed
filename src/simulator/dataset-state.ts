import type { Feedback } from '../schemas/feedback.js';
import type { Recording } from '../schemas/recording.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { SnapshotData } from './snapshot-data.js';

/**
 * What advance() and the dataset's edits change on top of the generated data: its own file, so
 * that dataset.ts (which calls advance) and advance.ts (which writes the state) share it without
 * importing each other.
 */

/** What advance() has changed on top of the generated data. */
export interface DayOverlay {
  feedback: Feedback[];
  survey: SurveyAnswer[];
  recordings: Recording[];
  /** Replacement fields by feedback key (`id:feedback_id`). */
  edits: Map<string, Partial<Feedback>>;
  /** Keys (presentation itemKey) of the day's items that moveItem took to another day or removeItem deleted. */
  movedAway?: { feedback: Set<string>; survey: Set<string>; recordings: Set<string> };
}

export interface DatasetState {
  rounds: number;
  overlays: Map<string, DayOverlay>;
  /** Ids of A/B tests that advance() removed. */
  removed: Set<string>;
  snapshots: SnapshotData;
}

/** The day's overlay, made empty the first time the day is changed. */
export function overlayOf(state: DatasetState, day: string): DayOverlay {
  let overlay = state.overlays.get(day);
  if (overlay === undefined) {
    overlay = { feedback: [], survey: [], recordings: [], edits: new Map() };
    state.overlays.set(day, overlay);
  }
  return overlay;
}
