package commands

import (
	"github.com/spf13/cobra"

	"playbook/interpreter/spec"
)

func schemaCommand() *cobra.Command {
	return offline(&cobra.Command{
		Use:   "schema",
		Short: "print the JSON Schema of playbook files (docs/playbook.schema.json), for editors and validators",
		Args:  noArgs,
		RunE: action(func(c *call) error {
			_, err := c.stdout.Write(spec.SchemaJSON())
			return err
		}),
	})
}
