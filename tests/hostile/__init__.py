"""The hostile suite: bad bytes, bad values, truncated files, filesystem faults and tampering, tried against
every command under the CLI contract (README "The CLI contract"). `kit` holds the runner and the invariants,
`mutate` the seeded byte mutations, `build` the data builders."""
