// Findings as the validator collects them, and the findings budget of one file (spec
// section 10; ptn.core.errors.FindingBudget).

import type { Severity } from "./package_api.js";
import type { RawFinding } from "./zip_reader.js";

export const MAX_FINDINGS_PER_RULE = 100;
export const MAX_FINDINGS_PER_FILE = 1000;

export function raw(rule: string, severity: Severity, member: string | null, where: string | null, message: string): RawFinding {
  return { rule, severity, member, pointer: where, message, more: 0 };
}

/** At most 100 findings per (rule, severity) and 1,000 in all, then one summary per cut rule
 * (ptn.core.errors.FindingBudget). */
export class Budget {
  readonly kept: RawFinding[] = [];
  readonly #listed = new Map<string, number>();
  readonly #leftOut = new Map<string, { rule: string; severity: Severity; n: number }>();
  #count = 0;

  room(rule: string, severity: Severity): boolean {
    return (
      (this.#listed.get(`${rule}\u0000${severity}`) ?? 0) < MAX_FINDINGS_PER_RULE &&
      this.#count < MAX_FINDINGS_PER_FILE
    );
  }

  skip(rule: string, severity: Severity, n = 1): void {
    const key = `${rule}\u0000${severity}`;
    const entry = this.#leftOut.get(key) ?? { rule, severity, n: 0 };
    entry.n += n;
    this.#leftOut.set(key, entry);
  }

  admit(f: RawFinding): boolean {
    if (f.more === 0 && this.room(f.rule, f.severity)) {
      const key = `${f.rule}\u0000${f.severity}`;
      this.#listed.set(key, (this.#listed.get(key) ?? 0) + 1);
      this.#count += 1;
      return true;
    }
    this.skip(f.rule, f.severity, f.more || 1);
    return false;
  }

  append(f: RawFinding): void {
    if (this.admit(f)) this.kept.push(f);
  }

  summaries(): RawFinding[] {
    return [...this.#leftOut.values()].map(({ rule, severity, n }) => ({
      rule,
      severity,
      member: null,
      pointer: null,
      message:
        `${n} more findings of this rule are not listed (at most ${MAX_FINDINGS_PER_RULE} per rule and ` +
        `${MAX_FINDINGS_PER_FILE} per file are)`,
      more: n,
    }));
  }

  finish(): RawFinding[] {
    return [...this.kept, ...this.summaries()];
  }
}
