package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/joho/godotenv"
)

// envFileName is the file of variables deskbot reads from its working
// directory, the one .env.example describes.
const envFileName = ".env"

// LoadEnvFile reads dir's .env when there is one, with godotenv's reading
// of the format (quotes, comments, export), and sets each variable the
// process's environment does not set: the environment wins, so a variable
// given on the command line or by a supervisor overrides the file. It
// returns the file's absolute path, or "" when there is no file. The
// variables go into the process's environment, not only the
// configuration's map, because some are read from there by name
// (SANDBOX_ENV's, a desk's api_key_env).
//
// A file that cannot be parsed stops the start without quoting the
// library's words: they quote the file near the mistake, which may be a
// secret.
func LoadEnvFile(dir string) (string, error) {
	path, err := filepath.Abs(filepath.Join(dir, envFileName))
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("cannot read %s: %v", path, errors.Unwrap(err))
	}
	vars, err := godotenv.UnmarshalBytes(data)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: a line is not in the form NAME=value (see .env.example)", path)
	}
	for k, v := range vars {
		if _, set := os.LookupEnv(k); !set {
			if err := os.Setenv(k, v); err != nil {
				return "", fmt.Errorf("%s: cannot set %s: %v", path, k, err)
			}
		}
	}
	return path, nil
}
