// A scratch directory for a benchmark whose subdirectories ext4 spreads over block groups.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Makes a scratch directory under the system temp directory and marks it, where the file system
 * supports it, as the top of a directory hierarchy (`chattr +T`), so that ext4 places each of
 * its subdirectories (an agent's root, the floor's log root) in a block group of its own.
 *
 * Why: ext4 without a journal (the root file system of these machines) allocates each new inode
 * past every inode of its block group freed in the last one to six minutes, reading each one's
 * inode-table block. /tmp's group holds the recent deletions of every process on the machine,
 * this benchmark's own phases included, and there a pod's eight new inodes (pod, volumes and
 * plugins directories, log directory, container directory, termination-message file, etc-hosts)
 * cost the agent up to 0.3 CPU-seconds per 110 pods (perf: the kernel's `recently_deleted` in
 * 8 to 19 % of its samples); in a group of its own, almost nothing (2 samples in 2,300). A node's kubelet root is not
 * where everything else on the machine is deleted. Without chattr or on other file systems this
 * is a plain temp directory.
 */
export function benchWorkDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  try {
    execFileSync('chattr', ['+T', dir], { stdio: 'ignore' });
  } catch {
    // Not ext2/3/4, or no chattr: the subdirectories stay near their parent.
  }
  return dir;
}
