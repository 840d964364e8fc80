import Testing

extension Tag {
    /// Tests whose assertions depend on wall-clock time or that load the machine: `make test`
    /// runs them after the rest, one at a time, so that on a 2-core machine no other test
    /// competes with them for the cooperative thread pool.
    @Tag public static var timing: Self
}
