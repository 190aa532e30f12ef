package main

import (
	"flag"

	"github.com/exocortex/exocortex/internal/system"
	"github.com/exocortex/exocortex/workers/watch"
)

// watchFlags are up's live-folder flags.
type watchFlags struct {
	dirs stringList
	poll bool
}

func (w *watchFlags) register(fs *flag.FlagSet) {
	fs.Var(&w.dirs, "watch", "a Markdown folder (Obsidian or Logseq vault, plain notes) to keep in step live; repeat it for more (the folders ingest added to <data>/watch are watched too)")
	fs.BoolVar(&w.poll, "watch-poll", false, "follow the watched folders by scanning them every second instead of inotify (network drives, containers)")
}

// apply adds the watcher's configuration to cfg's roles when --watch or the
// data directory's watch list names a folder (up then runs the files role).
func (w *watchFlags) apply(cfg *system.Config) error {
	listed, err := watch.ReadList(cfg.DataDir)
	if err != nil {
		return err
	}
	folders := watch.Union(w.dirs, listed)
	if len(folders) == 0 {
		if w.poll {
			return &usageError{cmd: "up", msg: "--watch-poll needs a folder to watch: give --watch DIR (or ingest a folder without --once)"}
		}
		return nil
	}
	wc := watch.Config{Folders: folders, Poll: w.poll}
	if err := wc.Validate(); err != nil {
		return err
	}
	cfg.StageConfig = append(cfg.StageConfig, &wc)
	return nil
}
