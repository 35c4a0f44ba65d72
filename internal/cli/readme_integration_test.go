//go:build integration

package cli

// readmeIntegration: TestREADME runs the README's needs-real-parts blocks.
const readmeIntegration = true
