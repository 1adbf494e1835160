from kubesched.cli.main import main

main()
