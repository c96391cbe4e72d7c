// Label and field selectors as apimachinery parses them (pkg/labels selector.go,
// pkg/fields selector.go): labels with =, ==, !=, in, notin, exists and !key; fields with =,
// == and != over a resource's supported field labels.
import { badRequest } from './status.js';

type Labels = Readonly<Record<string, string>>;

/** A parsed label selector. @internal */
export type LabelSelector = (labels: Labels) => boolean;

/** A parsed field selector over an object. @internal */
export type FieldSelector = (obj: unknown) => boolean;

/** Splits on commas outside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  if (cur.trim() !== '' || out.length > 0) out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

/** Parses a labelSelector query value; throws a 400 StatusError on a malformed one. @internal */
export function parseLabelSelector(s: string | null): LabelSelector {
  if (!s || s.trim() === '') return () => true;
  const terms = splitTerms(s).map((term): LabelSelector => {
    let m = /^([^\s!=()]+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
    if (m) {
      const key = m[1] as string;
      const values = new Set((m[3] as string).split(',').map((v) => v.trim()));
      return m[2] === 'in'
        ? (l) => key in l && values.has(l[key] as string)
        : (l) => !(key in l) || !values.has(l[key] as string);
    }
    m = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=()]*)$/.exec(term);
    if (m) {
      const [, key = '', op, value = ''] = m;
      return op === '!=' ? (l) => l[key] !== value : (l) => key in l && l[key] === value;
    }
    m = /^!\s*([^\s!=()]+)$/.exec(term);
    if (m) {
      const key = m[1] as string;
      return (l) => !(key in l);
    }
    m = /^([^\s!=()]+)$/.exec(term);
    if (m) {
      const key = m[1] as string;
      return (l) => key in l;
    }
    throw badRequest(`unable to parse requirement: found '${term}', expected: valid label selector`);
  });
  return (labels) => terms.every((t) => t(labels));
}

/** The value of a dotted path as the field label index shows it (strings; booleans as text). @internal */
export function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null)
    return path === 'spec.hostNetwork' || path === 'spec.unschedulable' ? 'false' : '';
  if (typeof cur === 'object') {
    // The Event `source` field label is source.component.
    const c = (cur as Record<string, unknown>).component;
    return typeof c === 'string' ? c : '';
  }
  return String(cur);
}

/** Parses a fieldSelector against the labels `supported` (400 on any other, as upstream). @internal */
export function parseFieldSelector(
  s: string | null,
  supported: readonly string[],
  kind: string,
): FieldSelector {
  if (!s || s.trim() === '') return () => true;
  const all = new Set(['metadata.name', 'metadata.namespace', ...supported]);
  const terms = s
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((term): FieldSelector => {
      const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(term);
      if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
      const [, key = '', op, value = ''] = m;
      if (!all.has(key)) {
        throw badRequest(`field label not supported: ${key}`);
      }
      void kind;
      return op === '!=' ? (o) => fieldValue(o, key) !== value : (o) => fieldValue(o, key) === value;
    });
  return (obj) => terms.every((t) => t(obj));
}
