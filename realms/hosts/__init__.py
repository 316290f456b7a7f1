"""Worker hosts: each announces itself, beats, takes realms up to its capacity, and gets
the tasks that touch its realms' sandboxes on its own queue; a surviving host concludes
the realms of one that died, and a host that comes back reaps what it left behind."""
