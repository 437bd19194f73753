// config_file.h — --config FILE: a run's settings read from a file, which
// options_parse applies beneath the command line's (an option given on the
// command line wins). The file is either a run's record — the JSON object
// --json writes (its "config" object is read) or that "config" object
// alone — or lines "key = value" ('#' starts a comment; a key is an option's
// name, with '-' or '_'; a flag's value is true or false).
#ifndef PELAB_CONFIG_FILE_H
#define PELAB_CONFIG_FILE_H

#include <stddef.h>

typedef struct {
    const char *key;    // as written: "rope_base" or "rope-base"
    const char *value;  // command-line text ("a,b" for a JSON array); NULL for JSON's null
    int line;           // where it is (the key = value form), for messages
} config_item;

typedef struct {
    config_item *items;
    int n;
    int from_record;  // a JSON object (a run's record): its outputs and machine settings are not the rerun's
    const char *given;  // a record's "given" list, comma-joined (NULL: not there, every setting counts)
    char *text;       // the file, which the items' keys and strings point into
    char *arena;      // the items' numbers and arrays
    size_t used;
} config_file;

// Reads path into cf: 0, or -1 with err filled (a file that cannot be read, or
// that is neither form, names the place it stops making sense).
int config_file_read(const char *path, config_file *cf, char *err, size_t errlen);
void config_file_free(config_file *cf);

#endif
