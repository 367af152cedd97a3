//! Work spread over the CPU's cores.

use crate::error::Result;
use rayon::prelude::*;

/// `f` over `items` on all cores (rayon's pool, so no threads start per call), results in
/// order; of the items that fail, the first one's error.
pub(crate) fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(usize, &T) -> Result<R> + Sync + Send,
) -> Result<Vec<R>> {
    let results: Vec<Result<R>> = items.par_iter().enumerate().map(|(i, item)| f(i, item)).collect();
    results.into_iter().collect()
}
