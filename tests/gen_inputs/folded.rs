//! Folded stacks in py-spy's `record -f raw` style: `thread;frames COUNT` lines until the text
//! reaches the size asked for. The stacks are a few thousand walks down one tree of functions,
//! so that they share prefixes as a real program's do, each seen on several threads.

use crate::Rng;

/// Functions the tree is made of.
const FUNCTIONS: u64 = 3_000;

/// Distinct stacks (walks down the tree).
const STACKS: u64 = 4_000;

pub fn stacks(bytes: usize, out: &mut Vec<u8>) {
    let names: Vec<String> = (0..FUNCTIONS)
        .map(|i| {
            format!(
                "handler_{i} (/srv/app/lib/package_{}/module_{}.py:{})",
                i % 40,
                i % 70,
                10 + i % 900
            )
        })
        .collect();
    let walks: Vec<String> = (0..STACKS)
        .map(|k| {
            let mut rng = Rng(0x5eed_f01d ^ (k + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let depth = 20 + rng.next() % 26;
            let mut node = 0;
            let mut walk = String::new();
            for level in 0..depth {
                // Few branches near the root, as a program's main loop and dispatch.
                let branches = if level < 6 { 2 } else { 4 };
                node = (node * 7 + 1 + rng.next() % branches) % FUNCTIONS;
                walk.push(';');
                walk.push_str(&names[node as usize]);
            }
            walk
        })
        .collect();
    let mut rng = Rng(0x5eed_f01d);
    while out.len() < bytes {
        let thread = 1 + rng.next() % 8;
        let walk = &walks[(rng.next() % STACKS) as usize];
        let line = format!(
            "thread (0x{thread:x}): worker-{thread}{walk} {}\n",
            1 + rng.next() % 50
        );
        out.extend_from_slice(line.as_bytes());
    }
}
