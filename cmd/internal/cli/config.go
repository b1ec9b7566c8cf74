package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// config layers settings onto the flags of the command that is running:
// flag > FUSEE_<FLAG> environment variable > config file > default.
//
// It applies only when a command runs, and only to that command's flags,
// with a fresh viper each time: binding in init() would make two commands
// that share a flag name overwrite each other. Environment variables come
// from the env given to Run (os.Environ() in Main), not from the process,
// so tests can run commands in-process with their own environment; an
// empty variable counts as unset, as viper would treat it.
//
// In the config file a setting may sit at the top level (json: true) or
// under the command's path (ring: {show: {json: true}}); the more
// specific one wins.
type config struct {
	file string
	env  []string
}

// configurable lists the only flags the environment and a config file may
// set: preferences (output as JSON), budgets (memory, scratch space,
// how long to wait for a lock) and the ring commands' etcd connection. Everything else is a command's target or
// a choice with consequences (a shard count, a run count, a seed, an
// output file, --force, --dry-run) and must be given on the command line:
// FUSEE_SHARDS=3 exported for gen must not answer ring init's --shards.
// The README's Settings section lists the same names; a test keeps them
// in step.
var configurable = map[string]bool{"json": true, "progress": true, "memory": true, "scratch": true, "lock-timeout": true,
	// Where the ring commands find etcd and how they connect (the ring
	// store flags); which namespace they act on is command-line only.
	"store": true, "cacert": true, "cert": true, "key": true, "user": true, "password": true,
	"dial-timeout": true, "command-timeout": true}

// cliOnly is the flag annotation that keeps one command's flag out of the
// environment and config file: a destructive command's target or output
// must come from the command line (see markCLIOnly).
const cliOnly = "fusee-cli-only"

// markCLIOnly makes the named flags of cmd settable only on the command
// line, even where their name is configurable elsewhere.
func markCLIOnly(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		_ = cmd.Flags().SetAnnotation(n, cliOnly, []string{"true"})
	}
}

func (c *config) apply(cmd *cobra.Command) error {
	v := viper.New()
	file := c.file
	if file == "" {
		file, _ = c.getenv("FUSEE_CONFIG")
	}
	if file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return usagef("reading config file %s: %v (fix the file or drop --config/FUSEE_CONFIG)", file, err)
		}
		unknown, fixed := unknownSettings(cmd.Root(), v.AllKeys())
		for _, key := range unknown {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: config file %s: unknown setting %q: no fusee command has that flag (misspelt?); it is ignored\n", file, key)
		}
		for _, key := range fixed {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: config file %s: setting %q is ignored: it is a command's target or choice, given only on the command line\n", file, key)
		}
	}
	path := commandPath(cmd)
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed {
			return
		}
		envName := "FUSEE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if !isConfigurable(f) {
			if _, set := c.getenv(envName); set && envName != "FUSEE_CONFIG" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s is ignored: --%s is given only on the command line\n", envName, f.Name)
			}
			return
		}
		source := ""
		var val any
		if s, ok := c.getenv(envName); ok {
			val, source = s, "environment variable "+envName
		} else if scoped := path + "." + f.Name; path != "" && v.InConfig(scoped) {
			val, source = v.Get(scoped), fmt.Sprintf("%s in %s", scoped, file)
		} else if v.InConfig(f.Name) {
			val, source = v.Get(f.Name), fmt.Sprintf("%s in %s", f.Name, file)
		} else {
			return
		}
		if err := setFlag(cmd, f, val); err != nil {
			firstErr = usagef("%s: %v", source, err)
		}
	})
	c.warnFixedEnv(cmd)
	return firstErr
}

// warnFixedEnv warns of each FUSEE_* variable that names a flag no
// command takes from the environment (FUSEE_SHARDS, FUSEE_DRY_RUN) when
// cmd has no such flag: apply warns of those cmd has. A shard count
// exported for gen is then named wherever it is ignored (reshard takes
// its count as an argument), as a shards: key in a config file is.
func (c *config) warnFixedEnv(cmd *cobra.Command) {
	var keys []string
	seen := map[string]bool{}
	for _, kv := range c.env {
		k, v, _ := strings.Cut(kv, "=")
		name, ok := strings.CutPrefix(k, "FUSEE_")
		if !ok || v == "" || k == "FUSEE_CONFIG" || seen[k] || cmd.Flags().Lookup(strings.ToLower(strings.ReplaceAll(name, "_", "-"))) != nil {
			continue
		}
		seen[k] = true
		keys = append(keys, strings.ToLower(name))
	}
	_, fixed := unknownSettings(cmd.Root(), keys)
	for _, key := range fixed {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: FUSEE_%s is ignored: --%s is given only on the command line\n",
			strings.ToUpper(key), strings.ReplaceAll(key, "_", "-"))
	}
}

// isConfigurable reports whether the environment or a config file may
// set f.
func isConfigurable(f *pflag.Flag) bool {
	return configurable[f.Name] && f.Annotations[cliOnly] == nil
}

// getenv looks name up in c.env; the last entry wins, as in os/exec. An
// empty value counts as unset.
func (c *config) getenv(name string) (string, bool) {
	for i := len(c.env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(c.env[i], "="); ok && k == name {
			return v, v != ""
		}
	}
	return "", false
}

// commandPath is the command's path below the root, dot-separated
// ("ring.plan").
func commandPath(cmd *cobra.Command) string {
	parts := strings.Fields(cmd.CommandPath())
	if len(parts) <= 1 {
		return ""
	}
	return strings.Join(parts[1:], ".")
}

func setFlag(cmd *cobra.Command, f *pflag.Flag, val any) error {
	var s string
	switch x := val.(type) {
	case []any:
		items := make([]string, len(x))
		for i, it := range x {
			items[i] = fmt.Sprint(it)
		}
		s = strings.Join(items, ",")
	case []string:
		s = strings.Join(x, ",")
	default:
		s = fmt.Sprint(x)
	}
	if err := cmd.Flags().Set(f.Name, s); err != nil {
		return fmt.Errorf("invalid value %q for --%s: %v", s, f.Name, err)
	}
	return nil
}

// unknownSettings lists the config keys that name no flag, neither a flag
// of some command at the top level ("json") nor a flag of the command whose
// path scopes it ("ring.plan.json"), and those that name only flags that
// are not configurable ("shards").
func unknownSettings(root *cobra.Command, keys []string) (unknown, fixed []string) {
	known := map[string]bool{} // name -> configurable somewhere
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := commandPath(c)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			for _, name := range []string{f.Name, strings.ReplaceAll(f.Name, "-", "_")} {
				known[name] = known[name] || isConfigurable(f)
				if path != "" {
					known[path+"."+name] = known[path+"."+name] || isConfigurable(f)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, k := range keys {
		ok, found := known[strings.ToLower(k)]
		switch {
		case !found:
			unknown = append(unknown, k)
		case !ok:
			fixed = append(fixed, k)
		}
	}
	return unknown, fixed
}
