#!/usr/bin/env bash
# Checks that the README and docs/ say only what is true of this tree:
#  - every relative link leads to a file, and every #anchor to a heading of it;
#  - every repository path they name in backticks exists (build/ outputs and patterns aside);
#  - every vrictl command in their code blocks is one of vrictl's commands;
#  - every source file of a module is named in its folder's README.md.
#   scripts/check-docs.sh VRICTL    (the built vrictl, which lists its commands)
set -euo pipefail
cd "$(dirname "$0")/.."
vrictl=${1:?usage: scripts/check-docs.sh VRICTL}
documents=(README.md docs/*.md)
failures=0
fail() { echo "check-docs: $*" >&2; failures=$((failures + 1)); }

# GitHub's anchor for a heading: lower case, punctuation dropped, blanks as dashes.
anchors_of() {
  sed -n 's/^#\{1,6\} //p' "$1" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

for doc in "${documents[@]}"; do
  dir=$(dirname "$doc")
  # Links: ](target) outside code spans; web links are not this tree's.
  while IFS= read -r target; do
    case "$target" in http://* | https://* | mailto:*) continue ;; esac
    file=${target%%#*}
    anchor=${target#"$file"}
    anchor=${anchor#\#}
    [ -n "$file" ] && path="$dir/$file" || path="$doc"
    if [ ! -e "$path" ]; then fail "$doc: link to $target: no $path"; continue; fi
    if [ -n "$anchor" ] && [ -f "$path" ] && ! anchors_of "$path" | grep -qxF -- "$anchor"; then
      fail "$doc: link to $target: $path has no heading #$anchor"
    fi
  done < <(grep -o '](\([^)]*\))' "$doc" | sed 's/^](//; s/)$//')

  # Paths in backticks that start with one of the tree's folders.
  while IFS= read -r path; do
    path=${path%%:*}  # file:line
    case "$path" in *'*'* | *'{'* | *'<'* | *'...'* | *'…'* | *'|'* | *' '*) continue ;; esac
    # A built program (bench/trace_replay) is named by its source; a release by its tag.
    [ -e "$path" ] || [ -e "$path.cc" ] || git rev-parse -q --verify "refs/tags/$path" > /dev/null ||
      fail "$doc: names \`$path\`, which this tree does not have"
  done < <(grep -o '`[a-z][a-z0-9_.-]*/[^` ]*`' "$doc" | tr -d '`' |
    grep -E '^(base|proto|cgroup-model|systemd|accounting|libvirt-bridge|nri|kubelet-bridge|topology-export|vri|vrictl|tools|tests|bench|fuzz|deploy|debian|scripts|docs)/' | sort -u)
done

# Every module's files, by name (either of a .cc/.h pair will do), in the README beside them.
for readme in $(git ls-files '*/README.md'); do
  dir=$(dirname "$readme")
  case "$dir" in tests* | bench* | fuzz* | deploy* | docs*) continue ;; esac
  for file in $(git ls-files "$dir/*.cc" "$dir/*.h"); do
    [ "$(dirname "$file")" = "$dir" ] || continue
    stem=$(basename "${file%.*}")
    grep -qF -- "$stem" "$readme" || fail "$readme: names nothing of $file"
  done
done

# vrictl's commands, as its own completion lists them.
commands=$("$vrictl" __complete -- "") || { echo "check-docs: $vrictl does not list its commands" >&2; exit 1; }
for doc in "${documents[@]}"; do
  while IFS= read -r line; do
    # The command: the first word after vrictl and its program options.
    read -r -a words <<< "$line"
    i=1
    while [ $i -lt ${#words[@]} ]; do
      case "${words[$i]}" in
        --socket | --color | --colour) i=$((i + 2)) ;;
        --*) i=$((i + 1)) ;;
        *) break ;;
      esac
    done
    [ $i -lt ${#words[@]} ] || continue  # vrictl alone: its shell
    command=${words[$i]}
    case "$command" in '#'*) continue ;; esac
    grep -qxF -- "$command" <<< "$commands" || fail "$doc: \`$line\`: vrictl has no command $command"
  done < <(awk '/^ *```/{block = !block; next} block' "$doc" | sed 's/ *; */\n/g; s/ *&& */\n/g' |
    sed -n 's/^ *\(\$ \)\{0,1\}\(vrictl\( \|$\).*\)/\2/p')
done

if [ $failures -gt 0 ]; then
  echo "check-docs: $failures problems" >&2
  exit 1
fi
echo "check-docs: ${#documents[@]} documents (links, paths, vrictl commands) and every module's files hold"
