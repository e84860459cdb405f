import type { Command } from 'commander';

/**
 * A bash completion script for the CLI, generated from its commander definitions: the commands, then each
 * command's options (zsh's script wraps it: see zshCompletion).
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

/** zsh's completion: the bash script through zsh's bashcompinit, which the script loads itself. */
export function zshCompletion(root: Command): string {
  const name = root.name();
  return `#compdef ${name}
# ${name} completion for zsh: eval "$(${name} completion zsh)" in ~/.zshrc
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashCompletion(root)}`;
}

/** fish's completion: the commands, then each command's options once it is typed. */
export function fishCompletion(root: Command): string {
  const name = root.name();
  const quote = (text: string) => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
  const lines = [
    `# ${name} completion for fish: ${name} completion fish > ~/.config/fish/completions/${name}.fish`,
  ];
  lines.push(`complete -c ${name} -f`);
  for (const command of root.commands) {
    lines.push(
      `complete -c ${name} -n __fish_use_subcommand -a ${command.name()} -d ${quote(command.description().split(':')[0] ?? '')}`,
    );
    for (const option of command.options) {
      if (option.long === undefined) continue;
      const short = option.short === undefined ? '' : ` -s ${option.short.slice(1)}`;
      lines.push(
        `complete -c ${name} -n '__fish_seen_subcommand_from ${command.name()}' -l ${option.long.slice(2)}${short} -d ${quote(option.description.split(' [')[0] ?? '')}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The shells a completion script is printed for. */
export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish'] as const;

/** The completion script for `shell`, or undefined for a shell without one. */
export function completionScript(root: Command, shell: string): string | undefined {
  if (shell === 'bash') return bashCompletion(root);
  if (shell === 'zsh') return zshCompletion(root);
  if (shell === 'fish') return fishCompletion(root);
  return undefined;
}
