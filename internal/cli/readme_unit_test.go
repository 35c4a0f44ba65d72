//go:build !integration

package cli

// readmeIntegration: without the integration tag TestREADME skips the
// README's needs-real-parts blocks.
const readmeIntegration = false
