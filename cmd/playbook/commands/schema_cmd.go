package commands

import (
	"playbook/interpreter"

	"github.com/urfave/cli/v2"
)

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the JSON Schema of playbook files (docs/playbook.schema.json), for editors and validators",
		Action: func(c *cli.Context) error {
			_, err := c.App.Writer.Write(interpreter.SchemaJSON())
			return err
		},
	}
}
