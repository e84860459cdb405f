import type { Command } from 'commander';

/**
 * A bash completion script for the CLI, generated from its commander definitions: the commands, then each
 * command's options. zsh takes it too, after `autoload -U bashcompinit && bashcompinit`.
 */
export function bashCompletion(root: Command): string {
  const name = root.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, '_')}`;
  const commands = root.commands.map((c) => c.name());
  const cases = root.commands.map((command) => {
    const options = command.options.map((o) => o.long).filter((o) => o !== undefined);
    return `    ${command.name()}) words="${[...options, '--help'].join(' ')}" ;;`;
  });
  return `# ${name} completion for bash (and zsh with bashcompinit): eval "$(${name} completion bash)"
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${[...commands, '--help', '--version'].join(' ')}"
  else
    case "\${COMP_WORDS[1]}" in
${cases.join('\n')}
    *) words="" ;;
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F ${fn} ${name}
`;
}
