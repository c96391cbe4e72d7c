// Resource amounts as the node status setters compute them, and their API spelling. CPU is
// counted in millicores, everything else in whole units (bytes, pods), so sums stay exact.

/** Amounts by resource name: `cpu` in millicores, memory and storage in bytes, `pods` a count. @public */
export type ResourceAmounts = Readonly<Record<string, number>>;

/** Whether `name` is a `hugepages-<size>` resource (upstream `IsHugePageResourceName`). @public */
export function isHugePageResourceName(name: string): boolean {
  return name.startsWith('hugepages-');
}

/**
 * Whether `name` is an extended resource (upstream `IsExtendedResourceName`): a domain-qualified
 * name outside `kubernetes.io/` and not a `requests.` quota name.
 *
 * @public
 */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.startsWith('requests.')) return false;
  const domain = name.slice(0, name.indexOf('/'));
  return domain !== 'kubernetes.io' && !domain.endsWith('.kubernetes.io');
}

const binaryResources = new Set(['memory', 'ephemeral-storage', 'storage']);
const binarySuffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** Bytes in upstream's canonical BinarySI form: `16314916Ki`, `100Mi`, `94636958229`. */
function formatBinarySI(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes === 0) return String(Math.trunc(bytes));
  let value = bytes;
  let i = 0;
  while (i < binarySuffixes.length - 1 && value % 1024 === 0) {
    value /= 1024;
    i++;
  }
  return `${value}${binarySuffixes[i]}`;
}

/**
 * An amount as a Quantity string, in the format upstream's resource would print it: cpu as
 * cores or millicores (`4`, `3900m`), memory, storage and hugepages in BinarySI, the rest as a
 * plain number.
 *
 * @public
 */
export function formatResourceQuantity(name: string, amount: number): string {
  if (name === 'cpu') return amount % 1000 === 0 ? String(amount / 1000) : `${amount}m`;
  if (binaryResources.has(name) || isHugePageResourceName(name)) return formatBinarySI(amount);
  return String(Math.trunc(amount));
}

/** A hugepage size in KiB as its resource name (`2048` → `hugepages-2Mi`). @public */
export function hugePageResourceName(pageSizeKiB: number): string {
  const size =
    pageSizeKiB % 1048576 === 0
      ? `${pageSizeKiB / 1048576}Gi`
      : pageSizeKiB % 1024 === 0
        ? `${pageSizeKiB / 1024}Mi`
        : `${pageSizeKiB}Ki`;
  return `hugepages-${size}`;
}
